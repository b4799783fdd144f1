"""Before/after: the headline figures of the MinHash, quality, API and reader benchmarks at two commits.

A refactor must not cost speed, and only a side-by-side run says so: figures quoted from another day
on a shared machine move by 10-15%. This script checks both commits out (``git archive`` into
``benchmarks/.work/refs/<sha>``, so each side runs its *own* code and its own benchmark scripts), then
runs each benchmark ``--runs`` times per side, alternating the sides (B, A, B, A, ...) so drift in
machine load hits both, and prints the median of each headline figure, before, after and the change.

Both sides use the interpreter that runs this script (the bench venv: ``benchmarks/setup_bench_env.sh``)
with ``PYTHONPATH`` set to the side's tree, so the editable install of the working tree is shadowed;
each side's first run also prints which ``lineage`` it imported, as a check. The load average is
printed before and after every run.

Usage::

    benchmarks/.venv/bin/python benchmarks/before_after.py --before cdcf9cf [--after HEAD] [--runs 3]
        [--only minhash quality api reader] [--from-logs]

Each figure is a median over the runs; the ``same run`` ratios (ours over the baseline that the
benchmark measures beside it) cancel most of the machine's load, which on 2 shared cores moves the
absolute figures by 10-30% between runs.

The sizes are smaller than each benchmark's defaults (see ``BENCHES``) so that 3 runs per side fit
in an hour on 2 cores; the figures are for comparing the two sides, not for the targets. The script
exits non-zero if any run fails or a headline figure cannot be parsed, or (with ``--max-drop``) if a
figure got worse by more than that fraction.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REFS = REPO / "benchmarks" / ".work" / "refs"


@dataclass(frozen=True)
class Figure:
    """One headline figure: its name, how to find it in the benchmark's output, which way is better."""

    name: str
    parse: Callable[[str], float]
    higher_is_better: bool = True


def _regex(pattern: str, group: int = 1) -> Callable[[str], float]:
    compiled = re.compile(pattern, re.MULTILINE)

    def parse(out: str) -> float:
        m = compiled.search(out)
        if m is None:
            raise ValueError(f"no match for {pattern!r}")
        return float(m.group(group).replace(",", ""))

    return parse


def _reader_row(ranks: int, pass_: str, column: str) -> Callable[[str], float]:
    """A cell of the reader benchmark's ``tier | ranks | pass | ...`` table (local tier)."""

    def parse(out: str) -> float:
        lines = [line.split(" | ") for line in out.splitlines() if " | " in line]
        header = next(cells for cells in lines if cells[0] == "tier")
        for cells in lines:
            row = dict(zip(header, cells, strict=False))
            if row.get("tier") == "local" and row.get("ranks") == str(ranks) and row.get("pass") == pass_:
                return float(row[column])
        raise ValueError(f"no reader row for {ranks} rank(s), {pass_} pass")

    return parse


@dataclass(frozen=True)
class Bench:
    script: str
    args: tuple[str, ...]
    figures: tuple[Figure, ...]
    own_script: bool = False  # this tree's script for both sides (it uses only public APIs): newer than "before"


BENCHES: dict[str, Bench] = {
    "minhash": Bench(
        "minhash.py",
        ("--en-docs", "5000", "--rounds", "3"),
        (
            Figure("minhash: ours docs/s", _regex(r"^\| ours \(numba[^|]*\|\s*([\d,]+)")),
            Figure("minhash: ours / datasketch, same run", _regex(r"^\| ours \(numba[^|]*\|[^|]*\|\s*([\d.]+)x")),
        ),
    ),
    "quality": Bench(
        "quality.py",
        ("--docs", "16000"),
        (
            Figure("quality: ours docs/s", _regex(r"^ours\s*:\s*([\d,]+) docs/s")),
            Figure("quality: ours / datatrove, same run", _regex(r"^speed-up\s*:\s*([\d.]+)x")),
        ),
    ),
    "api": Bench(
        "api.py",
        ("--samples", "2000000", "--requests", "500", "--seconds", "6"),
        (
            Figure("api: lineage lookups/s, 1 client", _regex(r"1 client\(s\):.* ([\d.]+) requests/s")),
            Figure("api: lineage lookups/s, 8 clients", _regex(r"8 client\(s\):.* ([\d.]+) requests/s")),
            Figure(
                "api: lookup p50 ms, 1 client",
                _regex(r"1 client\(s\):.*?p50 ([\d.]+) ms"),
                higher_is_better=False,
            ),
            Figure(
                "api: graph depth-4 p50 ms",
                _regex(r"depth 4 around a job.*?p50 ([\d.]+) ms"),
                higher_is_better=False,
            ),
        ),
    ),
    "reader": Bench(
        "reader.py",
        ("--gb", "0.5", "--skip-ceph", "--rounds", "1"),
        (
            Figure("reader: samples/s, 1 rank, cold", _reader_row(1, "cold", "ours_samples_per_s")),
            Figure("reader: samples/s, 1 rank, warm", _reader_row(1, "warm", "ours_samples_per_s")),
            Figure("reader: samples/s, 8 ranks, warm", _reader_row(8, "warm", "ours_samples_per_s")),
            Figure("reader: ours / plain scan, 1 rank, warm, same run", _reader_row(1, "warm", "ratio")),
            Figure("reader: ours / plain scan, 8 ranks, warm, same run", _reader_row(8, "warm", "ratio")),
        ),
    ),
    # One rank, best of 3 interleaved rounds per run: the 8-rank pass loads 2 cores to a load average of 6-7,
    # which swings the 1-rank figures of the run after it by 10-15%; alone they are steadier.
    "reader_1rank": Bench(
        "reader.py",
        ("--gb", "0.5", "--skip-ceph", "--rounds", "3", "--ranks", "1"),
        (
            Figure("reader alone: samples/s, 1 rank, cold", _reader_row(1, "cold", "ours_samples_per_s")),
            Figure("reader alone: samples/s, 1 rank, warm", _reader_row(1, "warm", "ours_samples_per_s")),
            Figure("reader alone: ours / plain scan, 1 rank, warm, same run", _reader_row(1, "warm", "ratio")),
        ),
    ),
    "reader_epoch": Bench(
        "reader_epoch.py",
        ("--gb", "0.5", "--epochs", "8"),
        (
            Figure("reader, one process: warm epoch CPU s", _regex(r"median CPU ([\d.]+) s"), higher_is_better=False),
            Figure("reader, one process: warm epoch wall s", _regex(r"median wall ([\d.]+) s"), higher_is_better=False),
        ),
        own_script=True,
    ),
}


def checkout(ref: str) -> Path:
    """The tree of ``ref`` under benchmarks/.work/refs/<sha> (extracted once; benchmark caches stay)."""
    sha = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--verify", f"{ref}^{{commit}}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    tree = REFS / sha[:12]
    if not (tree / ".extracted").exists():
        tree.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(REPO), "archive", sha], check=True, capture_output=True).stdout
        with tarfile.open(fileobj=BytesIO(archive)) as tar:
            tar.extractall(tree, filter="data")
        (tree / ".extracted").write_text(sha + "\n")
    return tree


def run_once(tree: Path, bench: Bench, log: Path) -> tuple[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str((REPO if bench.own_script else tree) / "benchmarks" / bench.script), *bench.args],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - start
    log.write_text(proc.stdout + "\n--- stderr ---\n" + proc.stderr)
    if proc.returncode != 0:
        # A benchmark exits non-zero when it misses its own target (quality's speed-up, the reader's 0.9x)
        # at these small sizes: its figures still count if they are all there, which main() checks.
        print(f"  ({bench.script} exited {proc.returncode}; output in {log})", flush=True)
    return proc.stdout, seconds


def which_lineage(tree: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, "-c", "import lineage; print(lineage.__file__)"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip() or out.stderr.strip()


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the commit before the change")
    parser.add_argument("--after", default="HEAD")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", nargs="+", choices=sorted(BENCHES), default=list(BENCHES))
    parser.add_argument(
        "--from-logs",
        action="store_true",
        help="read the figures from the logs an earlier run of this script left (same refs and --runs)",
    )
    parser.add_argument("--max-drop", type=float, default=None, help="fail if a figure worsens by more (0.05 = 5%%)")
    args = parser.parse_args()

    sides = {"before": checkout(args.before), "after": checkout(args.after)}
    for side, tree in sides.items():
        imported = which_lineage(tree)
        print(f"{side}: {args.before if side == 'before' else args.after} -> {tree} (imports {imported})")
        if not imported.startswith(str(tree)):
            sys.exit(f"the {side} side does not import its own tree")
    print(f"machine: {os.cpu_count()} cores; 1-min load average at start {os.getloadavg()[0]:.2f}\n", flush=True)

    figures: dict[str, dict[str, list[float]]] = {}
    loads: list[float] = []
    for name in args.only:
        bench = BENCHES[name]
        for run in range(args.runs):
            order = ("before", "after") if run % 2 == 0 else ("after", "before")
            for side in order:
                log = sides[side] / "benchmarks" / ".work" / f"before_after-{name}-{side}-{run}.log"
                log.parent.mkdir(parents=True, exist_ok=True)
                load = os.getloadavg()[0]
                if args.from_logs:
                    out, seconds = log.read_text().split("\n--- stderr ---\n", 1)[0], 0.0
                else:
                    out, seconds = run_once(sides[side], bench, log)
                loads += [load, os.getloadavg()[0]]
                values = {}
                for fig in bench.figures:
                    try:
                        values[fig.name] = fig.parse(out)
                    except ValueError as exc:
                        sys.exit(f"{name} ({side}): cannot read {fig.name!r}: {exc}; output in {log}")
                    figures.setdefault(fig.name, {"before": [], "after": []})[side].append(values[fig.name])
                shown = ", ".join(f"{k.split(': ', 1)[1]} {_fmt(v)}" for k, v in values.items())
                print(
                    f"{name} run {run + 1} {side:6}: {shown} ({seconds:.0f} s; load {load:.2f} -> "
                    f"{os.getloadavg()[0]:.2f})",
                    flush=True,
                )

    print(f"\n## Before/after, median of {args.runs} runs per side, alternating sides\n")
    print(f"before {args.before}, after {args.after}; {os.cpu_count()} cores; 1-min load average over the runs")
    if args.from_logs:
        print("(figures read from the logs of an earlier run: its load averages are in its own output).\n")
    else:
        print(f"{min(loads):.2f}-{max(loads):.2f} (median {statistics.median(loads):.2f}).\n")
    print("| figure | before | after | change | better is |")
    print("|---|---:|---:|---:|---|")
    worst = 0.0
    by_name = {fig.name: fig for bench in BENCHES.values() for fig in bench.figures}
    for name, sides_values in figures.items():
        before, after = (statistics.median(sides_values[s]) for s in ("before", "after"))
        change = (after - before) / before
        worse = -change if by_name[name].higher_is_better else change
        worst = max(worst, worse)
        better = "higher" if by_name[name].higher_is_better else "lower"
        print(f"| {name} | {_fmt(before)} | {_fmt(after)} | {change:+.1%} | {better} |")
    print(f"\nlargest worsening: {worst:.1%}")
    if args.max_drop is not None and worst > args.max_drop:
        sys.exit(f"a figure worsened by {worst:.1%} (> {args.max_drop:.0%})")


if __name__ == "__main__":
    main()
