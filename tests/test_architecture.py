"""The layer contract (pyproject ``[tool.importlinter]``): it holds, and it catches an upward import and a
second importer of a CLI command module."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("storage", "operators", "pipelines", "lineage", "api")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports with the repo's contract over the packages in ``tree`` (a copy shadows the
    installed tree: the editable-install finder comes after ``PYTHONPATH`` on the import path)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )


def test_the_layers_hold() -> None:
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def copy_packages(tmp_path: Path) -> None:
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))


def test_a_lower_layer_importing_a_higher_one_breaks_the_contract(tmp_path: Path) -> None:
    copy_packages(tmp_path)
    layout = tmp_path / "storage" / "layout.py"
    layout.write_text(layout.read_text() + "\nimport lineage.service.core  # noqa: E402,F401\n")
    result = lint_imports(tmp_path)
    assert result.returncode == 1, result.stdout
    assert "storage is not allowed to import lineage.service" in result.stdout


def test_a_second_importer_of_a_cli_command_module_breaks_the_contract(tmp_path: Path) -> None:
    """Only lineage/cli/main.py puts verbs on the app; a command module borrowing another's code would
    make the CLI's registration depend on import order again."""
    copy_packages(tmp_path)
    tier = tmp_path / "lineage" / "cli" / "tier.py"
    tier.write_text(tier.read_text() + "\nimport lineage.cli.release  # noqa: E402,F401\n")
    result = lint_imports(tmp_path)
    assert result.returncode == 1, result.stdout
    assert "Only the CLI's entry module imports its command modules BROKEN" in result.stdout
    assert "lineage.cli.tier -> lineage.cli.release" in result.stdout


def test_the_protected_cli_modules_are_the_ones_main_imports() -> None:
    """A new command module must be in the contract too: the list is what main.py imports from lineage.cli."""
    tree = ast.parse((ROOT / "lineage" / "cli" / "main.py").read_text())
    imported = {
        f"lineage.cli.{alias.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "lineage.cli"
        for alias in node.names
    }
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (cli,) = (c for c in contracts if c["id"] == "cli-commands")
    assert set(cli["protected_modules"]) == imported and cli["allowed_importers"] == ["lineage.cli.main"]


def _test_imports(path: Path) -> list[str]:
    """The ``tests.*`` modules a test file imports, other than the shared helpers in ``tests.support``
    and the data builders in ``tests.data``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
        found += [n for n in names if n.startswith("tests.") and not n.startswith(("tests.support", "tests.data"))]
    return found


def test_tests_mirror_the_packages_and_share_helpers_only_through_support() -> None:
    """Each test directory is named for a package directory (or is ``api``/``support``/``data``), and a
    test module never imports another test module or a conftest: shared code lives in tests/support."""
    tests = ROOT / "tests"
    for folder in sorted(p for p in tests.rglob("*") if p.is_dir() and p.name != "__pycache__"):
        rel = folder.relative_to(tests)
        if rel.parts[0] in ("support", "data", "api"):
            continue
        assert (ROOT / rel).is_dir(), f"tests/{rel} mirrors no package directory"
    offenders = {str(p.relative_to(ROOT)): _test_imports(p) for p in tests.rglob("*.py")}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_mirror_check_catches_a_cross_test_import(tmp_path: Path) -> None:
    stray = tmp_path / "test_stray.py"
    stray.write_text("from tests.conftest import write_jsonl\nfrom tests.support.helpers import corrupted\n")
    assert _test_imports(stray) == ["tests.conftest"]


MARKERS = ("# start-up:", "# extra:")  # what a lazy import keeps out of an import; the extra it guards


def unexplained_local_imports(path: Path) -> list[int]:
    """Lines of function-local imports in ``path`` with no ``# start-up: ...`` or ``# extra: ...``
    comment on the import or above its block of imports."""
    lines = path.read_text(encoding="utf-8").splitlines()
    tree = ast.parse("\n".join(lines))
    functions = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
    local = {node for f in functions for node in ast.walk(f) if isinstance(node, ast.Import | ast.ImportFrom)}
    import_lines = {n for node in local for n in range(node.lineno, (node.end_lineno or node.lineno) + 1)}
    unexplained = []
    for node in sorted(local, key=lambda node: node.lineno):
        n = node.lineno  # 1-based: lines[n - 1] is the import
        explained = any(m in lines[n - 1] for m in MARKERS)
        while not explained and n > 1:
            n -= 1
            text = lines[n - 1].strip()
            if text.startswith(MARKERS):
                explained = True
            elif not (n in import_lines or text == "" or text.startswith("#")):
                break
        if not explained:
            unexplained.append(node.lineno)
    return unexplained


def test_every_function_local_import_says_what_it_keeps_out() -> None:
    """A lazy import exists only to keep a heavy module out of an import (``lineage --help``, an
    HTTP-only client, a reader that never opens the catalog) or to guard an install extra, and says
    which: the rest are top-level imports, so a hidden cycle cannot hide behind one."""
    found = {
        str(path.relative_to(ROOT)): lines
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if (lines := unexplained_local_imports(path))
    }
    assert found == {}


def test_the_local_import_check_catches_an_unexplained_one(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "def f():\n    # start-up: DuckDB\n    import duckdb\n\n    import json\n    return duckdb, json\n\n"
        "def g():\n    x = 1\n    import os\n    return os, x\n"
    )
    assert unexplained_local_imports(module) == [10]


def module_cycles(graph) -> list[list[str]]:  # type: ignore[no-untyped-def]
    """Strongly connected groups of more than one module in ``graph`` (a grimp ImportGraph)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(module: str) -> None:  # Tarjan's algorithm; the graph is small (~150 modules)
        index[module] = low[module] = len(index)
        stack.append(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            group = [stack.pop()]
            while group[-1] != module:
                group.append(stack.pop())
            if len(group) > 1:
                cycles.append(sorted(group))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return cycles


def test_no_module_imports_itself_back_counting_function_local_imports() -> None:
    """The acyclic contract compares sibling packages; this compares every pair of modules, with the
    imports inside functions counted (grimp reads every import statement of a module)."""
    import grimp

    assert module_cycles(grimp.build_graph(*PACKAGES)) == []


def test_the_cycle_check_finds_a_cycle_through_a_function_local_import(tmp_path: Path) -> None:
    import grimp

    package = tmp_path / "cyc"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from cyc import b\n")
    (package / "b.py").write_text("def f():\n    from cyc import a\n    return a\n")
    sys.path.insert(0, str(tmp_path))
    try:
        assert module_cycles(grimp.build_graph("cyc", cache_dir=None)) == [["cyc.a", "cyc.b"]]
    finally:
        sys.path.remove(str(tmp_path))
