"""The ``lineage`` command as a package (lineage/cli/): it starts without the heavy libraries, and each lazy
import says why it is lazy."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = ROOT / "lineage" / "cli"
# What `lineage --help` must not pay for (none of these is loaded by it today).
HEAVY = ("sqlalchemy", "duckdb", "deltalake", "numba", "numpy", "pyarrow", "fastapi", "uvicorn", "pyspark", "ray")


def _heavy(modules: list[str]) -> list[str]:
    return sorted({m.split(".")[0] for m in modules} & set(HEAVY))


def test_importing_the_cli_loads_no_heavy_library() -> None:
    code = "import json, sys\nimport lineage.cli.main\nprint(json.dumps(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    modules = json.loads(result.stdout)
    assert "lineage.cli.release" in modules  # every command module is imported ...
    assert _heavy(modules) == []  # ... and none of them pulls a heavy library in


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


def _function_local_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    functions = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
    return [node for f in functions for node in ast.walk(f) if isinstance(node, ast.Import | ast.ImportFrom)]


def test_every_function_local_import_says_what_it_keeps_out_of_start_up() -> None:
    """A lazy import in the CLI exists only to keep ``lineage --help`` fast: a ``# start-up: ...`` comment
    on it, or above its block of imports, names what it keeps out."""
    unexplained = []
    for path in sorted(CLI.glob("*.py")):
        source = path.read_text()
        lines = source.splitlines()
        tree = ast.parse(source)
        local = _function_local_imports(tree)
        import_lines = {n for node in local for n in range(node.lineno, (node.end_lineno or node.lineno) + 1)}
        for node in local:
            n = node.lineno  # 1-based: lines[n - 1] is the import
            explained = "# start-up:" in lines[n - 1]
            while not explained and n > 1:
                n -= 1
                text = lines[n - 1].strip()
                if text.startswith("# start-up:"):
                    explained = True
                elif not (n in import_lines or text == "" or text.startswith("#")):
                    break
            if not explained:
                unexplained.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert unexplained == []
