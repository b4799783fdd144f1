"""The ``lineage`` command as a package (lineage/cli/): it starts without the heavy libraries, each lazy
import says why it is lazy, and every refusal exits with the code of its row in the errors table."""

from __future__ import annotations

import gc
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import typer
import typer.main
from typer.testing import CliRunner

from lineage import errors
from lineage.cli.app import guard
from lineage.cli.main import build_app, only_the_group_invoked
from tests.support.cli import lineage_loading

ROOT = Path(__file__).resolve().parents[3]
CLI = ROOT / "lineage" / "cli"
# What `lineage --help` must not pay for (none of these is loaded by it today).
HEAVY = ("sqlalchemy", "duckdb", "deltalake", "numba", "numpy", "pyarrow", "fastapi", "uvicorn", "pyspark", "ray")


def _heavy(modules: list[str]) -> list[str]:
    return sorted({m.split(".")[0] for m in modules} & set(HEAVY))


def test_building_the_cli_loads_no_heavy_library() -> None:
    code = (
        "import json, sys\nimport lineage.cli.main\nlineage.cli.main.build_app()\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    modules = json.loads(result.stdout)
    assert "lineage.cli.release" in modules  # every command module is imported ...
    assert _heavy(modules) == []  # ... and none of them pulls a heavy library in


def test_the_main_module_of_a_spawned_worker_imports_nothing_of_the_cli() -> None:
    """A worker process ``lineage dedupe`` spawns to parse JSON imports the main module again (the console
    script or ``lineage.__main__``): the CLI layer (typer, the settings, the command modules) was 0.19 s of
    its start-up, which the command waited for."""
    code = (
        "import json, runpy, sys\nrunpy.run_module('lineage', run_name='__mp_main__')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('typer', 'pydantic', 'lineage.')))))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert json.loads(result.stdout) == ["lineage.cli", "lineage.cli.main"]


def test_lineage_help_loads_no_heavy_library() -> None:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "lineage", "--help"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0 and "release" in result.stdout and "token" in result.stdout, result.stderr
    imported = [
        line.rsplit("|", 1)[1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")
    ]
    assert "lineage.cli.main" in imported
    assert _heavy(imported) == []


def test_a_console_script_installed_before_the_package_still_runs(tmp_path: Path) -> None:
    """pip wrote ``from lineage.cli import main`` into existing ``lineage`` scripts; until a reinstall
    rewrites them, they run the command and say how to stop the warning."""
    script = tmp_path / "lineage"
    script.write_text(
        "import sys\nfrom lineage.cli import main\nif __name__ == '__main__':\n"
        "    sys.argv[0] = sys.argv[0].removesuffix('.exe')\n    sys.exit(main())\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LINEAGE_HOME": str(tmp_path / "home")}
    result = subprocess.run([sys.executable, str(script), "--help"], env=env, capture_output=True, text=True)
    assert result.returncode == 0 and "release" in result.stdout, result.stderr
    assert "DeprecationWarning" in result.stderr and "pip install -e ." in result.stderr


def _refusing_app(error: Exception) -> typer.Typer:
    """The real app with one more verb, whose body raises ``error`` the way every verb's work does."""
    app = build_app()

    def refuse() -> None:
        """Refuse."""

        def work() -> None:
            raise error

        guard(work)

    app.command("refuse")(refuse)
    return app


@pytest.mark.parametrize("rule", errors.TABLE, ids=lambda rule: rule.code)
def test_each_refusal_exits_with_its_rows_code_and_one_line(rule: errors.Rule) -> None:
    message = f"the {rule.cls.__name__} message, long enough that a narrow console would wrap it: " + "x" * 100
    result = CliRunner().invoke(_refusing_app(rule.cls(message)), ["refuse"])
    assert result.exit_code == rule.exit_code, result.output
    assert result.stderr.splitlines() == [f"error: {message}"] and result.stdout == ""
    assert "Traceback" not in result.output


def test_the_exit_codes_leave_0_and_clicks_2_alone_and_tell_each_kind_of_refusal_apart() -> None:
    codes = {rule.cls: rule.exit_code for rule in errors.TABLE}
    assert not {0, 2} & set(codes.values())

    def parent(cls: type) -> type | None:
        return next((base for base in cls.__mro__[1:] if base in codes), None)

    kinds = [cls for cls in codes if parent(cls) in (None, errors.LineageError)]
    assert len({codes[cls] for cls in kinds}) == len(kinds)
    for cls in set(codes) - set(kinds):  # a subclass means one of its bases to a script, or has its own code
        bases = {codes[base] for base in cls.__mro__[1:] if base in codes}
        others = {codes[c] for c in codes if c is not cls}
        assert codes[cls] in bases or codes[cls] not in others, cls


def test_a_usage_error_is_clicks_2_and_a_bug_is_1_with_its_traceback() -> None:
    usage = CliRunner().invoke(build_app(), ["release", "show"])  # NAME@TAG missing
    assert usage.exit_code == 2 and "Missing argument" in usage.output
    bug = CliRunner().invoke(_refusing_app(RuntimeError("a bug")), ["refuse"])
    assert bug.exit_code == 1 and isinstance(bug.exception, RuntimeError)  # not swallowed into one line


def test_the_readme_lists_the_exit_codes_of_the_table() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    listed = {
        name: int(code)
        for code, classes in re.findall(r"^\| (\d+) \|[^|]*\|([^|]*)\|$", section, re.M)
        for name in re.findall(r"`(\w+)`", classes)
    }
    assert listed == {rule.cls.__name__: rule.exit_code for rule in errors.TABLE}


def _click(app: typer.Typer) -> Any:
    """The app's click group (Typer's own click, not ``click.Group``: a group is what has ``commands``)."""
    command = typer.main.get_command(app)
    assert hasattr(command, "commands")
    return command


def _shape(command: Any) -> Any:
    """What a user sees of a command: its help, each option (names, default, help) and its subcommands."""
    params = [(p.name, tuple(p.opts), p.required, repr(p.default), getattr(p, "help", None)) for p in command.params]
    subs = {name: _shape(sub) for name, sub in getattr(command, "commands", {}).items()}
    return (command.help, params, subs)


@pytest.mark.parametrize("flags", [[], ["--verbose"], ["-v"]])
def test_a_group_invoked_gets_only_its_own_verbs_and_they_are_the_same(flags: list[str]) -> None:
    """``lineage takedown apply 1`` builds the click commands of the ``takedown`` group only (typer turns
    every verb into one at every run); each group so built is the group of the whole app, option for option."""
    whole = _click(build_app())
    groups = [name for name, command in whole.commands.items() if hasattr(command, "commands")]
    assert "takedown" in groups and "release" in groups
    for name in groups:
        alone = _click(only_the_group_invoked(build_app(), [*flags, name, "anything", "--json"]))
        assert list(alone.commands) == [name]
        assert _shape(alone.commands[name]) == _shape(whole.commands[name])
        assert [p.name for p in alone.params] == [p.name for p in whole.params]  # --verbose, --version


@pytest.mark.parametrize(
    "args", [[], ["--help"], ["--version"], ["gc", "--json"], ["nosuch", "x"], ["--json", "takedown"]]
)
def test_anything_but_a_group_invoked_gets_the_whole_app(args: list[str]) -> None:
    assert list(_click(only_the_group_invoked(build_app(), args)).commands) == list(_click(build_app()).commands)


def test_the_group_alone_runs_as_it_does_on_the_whole_app(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LINEAGE_HOME": str(tmp_path / "home")}
    for args in (["takedown", "--help"], ["-v", "takedown", "list", "--json"], ["takedown", "nosuch"]):
        result = subprocess.run([sys.executable, "-m", "lineage", *args], env=env, capture_output=True, text=True)
        whole = CliRunner().invoke(build_app(), args, env={"LINEAGE_HOME": str(tmp_path / "home")})
        assert result.returncode == whole.exit_code, (args, result.stderr, whole.output)
        assert ("apply" in result.stdout) == ("apply" in whole.stdout), args


def test_python_m_lineage_imported_by_a_spawned_worker_runs_no_command() -> None:
    """``lineage dedupe`` parses in spawned worker processes, which import ``__main__`` (here
    ``lineage.__main__``) as ``__mp_main__``: that import must not run the command again."""
    code = "import runpy\nrunpy.run_module('lineage', run_name='__mp_main__')\nprint('imported')"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "imported"  # main() would print the usage and exit first


def test_start_up_objects_are_frozen_only_in_the_lineage_process() -> None:
    """The console script freezes what start-up made (the exit then skips collecting it); a test's in-process
    runner, which never calls ``main``, keeps its objects collectable."""
    from lineage.cli.app import freeze_start_up

    before = gc.get_freeze_count()
    freeze_start_up()
    assert gc.get_freeze_count() == before
    script = (
        "import gc, sys\nfrom lineage.cli.main import main\nsys.argv = ['lineage', '--version']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\nprint(gc.get_freeze_count())\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True)
    assert int(out.stdout.strip().splitlines()[-1]) > 10_000


def _collections_during_main(counter: str, args: list[str], report: str, tmp_path: Path) -> list[str]:
    """Run ``main`` on ``args`` in a fresh interpreter with the gc callback ``count`` (defined by ``counter``)
    registered first; the last line printed by ``report``, split."""
    script = "\n".join(
        [
            "import gc, sys",
            "from lineage.cli.main import main",
            textwrap.dedent(counter),
            "gc.callbacks.append(count)",
            f"sys.argv = ['lineage', *{args!r}]",
            "try:\n    main()\nexcept SystemExit as exit:\n    assert not exit.code, exit.code",
            f"print({report})",
        ]
    )
    env = {**os.environ, "LINEAGE_HOME": str(tmp_path / "home")}
    run = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return run.stdout.strip().splitlines()[-1].split()


def test_the_service_is_imported_with_the_collector_paused_only_in_the_lineage_process(tmp_path: Path) -> None:
    """The console script imports the service with the cyclic collector off (it walked start-up's objects again
    and again, 0.1-0.35 s) and on again after, with what the import made frozen first (else the next
    collection walks it all once more); a test's in-process runner, which never calls ``main``, keeps the
    collector as it is."""
    from lineage.cli.app import collector_paused

    with collector_paused():
        assert gc.isenabled()
    counter = """
        during, after = [], []
        def count(phase, info):
            core = sys.modules.get("lineage.service.core")
            if phase == "start" and core is not None and not hasattr(core, "Service"):  # its import is under way
                during.append(info["generation"])
            elif phase == "start" and core is not None and not gc.get_freeze_count():  # imported, not frozen
                after.append(info["generation"])
        """
    found = _collections_during_main(
        counter, ["datasets", "--json"], "len(during), len(after), gc.isenabled()", tmp_path
    )
    assert found == ["0", "0", "True"]


def test_the_cli_layer_is_imported_with_the_collector_paused(tmp_path: Path) -> None:
    """The console script imports the CLI layer (typer, rich, the settings, the command modules) and builds
    the app with the cyclic collector off, then freezes what that made: with it on, it walked those objects
    again and again. No collection runs before the freeze, and the collector is on again after, with full
    collections a hundred times further apart and young ones as they were."""
    young, middle, old = gc.get_threshold()
    counter = """
        before_freeze = []
        def count(phase, info):
            if phase == "start" and not gc.get_freeze_count():
                before_freeze.append(info["generation"])
        """
    report = "len(before_freeze), gc.get_freeze_count() > 10_000, gc.isenabled(), *gc.get_threshold()"
    found = _collections_during_main(counter, ["takedown", "--help"], report, tmp_path)
    assert found == ["0", "True", "True", str(young), str(middle), str(old * 100)]


def test_lineage_dedupe_of_a_file_loads_no_catalog_stack(tmp_path: Path) -> None:
    """``lineage dedupe`` needs no catalog: the verb builds the service's file operations alone, so neither
    SQLAlchemy nor the catalog models nor the schemas module is imported (0.7 s of its start-up)."""
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": str(i), "text": f"document {i} " * 30}) + "\n" for i in range(10)))
    heavy = ("sqlalchemy", "lineage.catalog.models", "lineage.service.schemas", "lineage.service.core")
    _, loaded = lineage_loading(
        tmp_path / "home", ["dedupe", str(docs), "--output", str(tmp_path / "out.jsonl")], heavy
    )
    assert loaded == []
    assert (tmp_path / "out.jsonl").read_text().count("\n") == 10


def test_lineage_dedupe_loads_numba_without_scipy_linalg(tmp_path: Path) -> None:
    """numba's CPU target probed for a BLAS by importing all of ``scipy.linalg`` (0.13 s on the sketcher's
    path); the ``lineage`` process skips the probe (``operators/numba_start_up.py``). The file is large
    enough for the sketcher to load the compiled kernels."""
    docs = tmp_path / "docs.jsonl"
    docs.write_text(
        "".join(json.dumps({"id": str(i), "text": f"document {i % 50} " + "word " * 60}) + "\n" for i in range(1200))
    )
    assert docs.stat().st_size > 256 << 10
    out, loaded = lineage_loading(
        tmp_path / "home", ["dedupe", str(docs), "--output", str(tmp_path / "o.jsonl")], ("numba", "scipy.linalg")
    )
    assert "kept 50," in out, out
    assert loaded == ["numba"]


def test_lineage_dedupe_of_a_small_file_imports_no_pandas(tmp_path: Path) -> None:
    """pyarrow imported pandas (0.11-0.14 s) at its first conversion of Python values, a fifth of a small
    ``lineage dedupe``; the ``lineage`` process defers it (``storage/arrow_pandas.py``)."""
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": str(i), "text": f"document {i % 3} " * 30}) + "\n" for i in range(10)))
    out, loaded = lineage_loading(
        tmp_path / "home", ["dedupe", str(docs), "--output", str(tmp_path / "o.jsonl")], ("pandas",)
    )
    assert "dropped 7 near-duplicates" in out
    assert loaded == []
