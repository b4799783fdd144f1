"""Deferred kernels (``operators/minhash/_jit.py``): a kernel that calls another compiles, from any
module that imported it, and a kernel defined once numba is loaded is a dispatcher at once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

_CODE = """
import sys, types
from operators.minhash import _jit

helper_module = types.ModuleType("helper_module")
sys.modules["helper_module"] = helper_module
exec('''
from operators.minhash._jit import njit

@njit(inline="always")
def twice(x):
    return 2 * x

@njit
def outer(x):
    return twice(x) + 1
''', helper_module.__dict__)

user = types.ModuleType("user_module")
sys.modules["user_module"] = user
exec('''
from helper_module import outer, twice
from operators.minhash._jit import njit

@njit
def uses(x):
    return outer(x) * twice(x)
''', user.__dict__)

assert type(user.uses).__name__ == "Kernel" and "numba" not in sys.modules
assert user.uses(3) == 7 * 6  # compiles uses -> outer -> twice: callees seen as dispatchers
assert _jit.made() and type(user.uses).__name__ == "CPUDispatcher"
assert type(helper_module.twice).__name__ == "CPUDispatcher"

late = _jit.njit(lambda x: x + 1)
assert type(late).__name__ == "CPUDispatcher" and late(1) == 2
print("ok")
"""


def test_deferred_kernels_compile_across_modules_and_late_ones_are_dispatchers() -> None:
    result = subprocess.run([sys.executable, "-c", _CODE], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


_WARM_UP = """
import pyarrow as pa
from operators.minhash import MinHashDedupe, _jit, shingle, signature

op = MinHashDedupe({})
assert not _jit.made()
op.warm_up()
kernels = [shingle._shingle_kernel, signature._minhash_kernel]
loaded = [list(k.signatures) for k in kernels]
assert _jit.made() and all(loaded)
texts = pa.array(["some English words here " * 4000, "中文和 English 混合的文本 " * 4000], pa.string())
op.sketch(pa.record_batch({"sample_id": ["1", "2"], "text": texts, "source_dataset": ["d", "d"]}))
assert [list(k.signatures) for k in kernels] == loaded, "a real batch needed other types than the warm-up's"
print("ok")
"""


def test_the_minhash_warm_up_loads_the_kernels_a_real_batch_uses() -> None:
    result = subprocess.run([sys.executable, "-c", _WARM_UP], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
