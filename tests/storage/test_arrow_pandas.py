"""pyarrow without pandas until pandas is imported (``storage/arrow_pandas.py``): each case in a fresh
interpreter, since both of pyarrow's pandas checks run once per process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_DEFERRED = """
import sys
import pyarrow as pa, pyarrow.compute as pc
from storage.arrow_pandas import defer_pandas
assert defer_pandas() and defer_pandas()  # a second call changes nothing
finders = len(sys.meta_path)
pa.array(["a", None]); pa.array(["a"], pa.string()); pa.scalar("b"); pa.Table.from_pylist([{"x": 1}])
pc.binary_length(pa.array(["ab"])).fill_null(0).to_numpy(zero_copy_only=False)
assert "pandas" not in sys.modules, "a conversion imported pandas"
import pandas as pd
assert len(sys.meta_path) == finders - 1, "the watching finder stays after pandas is imported"
assert pa.lib._pandas_api.have_pandas
assert pa.array(pd.Series([1.0, None, float("nan")])).null_count == 2  # a Series, as pyarrow treats one
assert pa.table(pd.DataFrame({"a": [1, None]})).column("a").null_count == 1
assert pa.array(pd.array([1, pd.NA], dtype="Int64")).null_count == 1
assert pa.table({"a": [1]}).to_pandas().shape == (1, 1)
try:
    pa.array([1, pd.NA], from_pandas=True)
except pa.ArrowInvalid:
    print("pd.NA in a list refused")
print(pa.array([pd.Timestamp("2020-01-01 00:00:00.000000001")], pa.timestamp("ns"))[0].value)
"""

_ALREADY = """
import sys
import pandas as pd
import pyarrow as pa
from storage.arrow_pandas import defer_pandas
finders = list(sys.meta_path)
assert not defer_pandas()
assert sys.meta_path == finders
print(pa.array([1, pd.NA], from_pandas=True).null_count)
"""

_WITHOUT_PANDAS = """
import sys
class Absent:  # pandas not installed, as far as imports go
    def find_spec(self, name, path=None, target=None):
        if name == "pandas":
            raise ModuleNotFoundError("No module named 'pandas'", name=name)
sys.meta_path.insert(0, Absent())
import pyarrow as pa
from storage.arrow_pandas import defer_pandas
defer_pandas()
print(pa.array([1, None]).null_count)
try:
    import pandas
except ImportError:
    print("no pandas")
"""


_NO_SHIM = """
import sys
import pyarrow as pa
del pa.lib._pandas_api  # a pyarrow whose private shim is elsewhere
from storage.arrow_pandas import defer_pandas
finders = list(sys.meta_path)
assert not defer_pandas()
assert sys.meta_path == finders
print(pa.array([1, None]).null_count)
"""


def _run(code: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.split("\n")[:-1]


def test_deferred_pyarrow_converts_without_pandas_and_knows_pandas_once_it_is_imported() -> None:
    """Typed, inferred and NumPy conversions import no pandas; a real ``import pandas`` afterwards gives pyarrow
    pandas objects back, except the documented cases: ``pd.NA`` and a ``Timestamp``'s nanoseconds inside a
    Python list."""
    assert _run(_DEFERRED) == ["pd.NA in a list refused", "1577836800000000000"]


def test_a_process_that_has_pandas_already_is_left_as_it_is() -> None:
    assert _run(_ALREADY) == ["1"]


def test_without_pandas_installed_nothing_changes() -> None:
    assert _run(_WITHOUT_PANDAS) == ["1", "no pandas"]


_CLI_HOOK = """
import sys
import pyarrow as pa
from lineage.cli import app
app.pyarrow_without_pandas()  # an in-process runner: main() never ran
pa.array(["a"], pa.string())
print("pandas" in sys.modules)
"""

_CLI_HOOK_WHOLE = """
import sys
import pyarrow as pa
from lineage.cli import app
app.as_whole_process()  # what main() does first
app.pyarrow_without_pandas()
pa.array(["a"], pa.string())
print("pandas" in sys.modules)
"""


def test_the_cli_defers_pandas_only_in_the_lineage_process() -> None:
    """A test's in-process runner (which never calls ``main``) keeps pyarrow as it is: its first conversion
    imports pandas; in the ``lineage`` process it does not. Each in a fresh interpreter, where pandas is not
    imported yet (in this one it may be, and the hook would do nothing either way)."""
    assert _run(_CLI_HOOK)[0] == "True"
    assert _run(_CLI_HOOK_WHOLE) == ["False"]


def test_a_pyarrow_without_the_shim_is_left_as_it_is() -> None:
    """The shim is pyarrow's private object: where a release moves it, the ``lineage`` process runs as before."""
    assert _run(_NO_SHIM) == ["1"]
