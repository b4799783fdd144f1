"""Which samples two releases decide differently: the kept ids of each, and every id kept by one only.

A release is ``HOME:NAME@TAG`` (the ``LINEAGE_HOME`` that holds it, then its ref), so two
catalogs can be compared, e.g. the demo run by two versions of the code::

    LINEAGE_HOME=/tmp/old lineage demo    # with the old code
    LINEAGE_HOME=/tmp/new lineage demo    # with the new code
    python benchmarks/verdict_diff.py /tmp/old:debian-clean@demo /tmp/new:debian-clean@demo --markdown out.md

For each id kept by one release only it prints the other side's verdict and reason (from that
version's lineage table), the sample's source and the start of its text.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lineage.service.core import Service  # noqa: E402
from lineage.settings import Settings  # noqa: E402
from storage.delta import version_dataset  # noqa: E402
from storage.tier import get_tier  # noqa: E402


@dataclass(frozen=True)
class Side:
    label: str
    home: Path
    ref: str

    @classmethod
    def parse(cls, text: str) -> Side:
        home, sep, ref = text.rpartition(":")
        if not sep or "@" not in ref:
            raise SystemExit(f"expected HOME:NAME@TAG, got {text!r}")
        return cls(text, Path(home), ref)

    def settings(self) -> Settings:
        return Settings(home=self.home)

    def pinned(self, name: str) -> Any:
        """The release's pinned table ``name`` (tier, table, Delta version)."""
        service = Service(self.settings())
        try:
            return service.get_release(self.ref).tables[name]
        finally:
            service.close()

    def table(self, name: str, columns: list[str]) -> pa.Table:
        """The release's pinned ``data`` or ``lineage`` table, at the Delta version it pins."""
        pinned = self.pinned(name)
        tier = get_tier(pinned.tier, self.settings())
        return version_dataset(tier, pinned.table, pinned.delta_version).to_table(columns=columns)

    def kept(self) -> pa.Table:
        return self.table("data", ["sample_id", "source_dataset", "text"])


def _dropped_by(side: Side, ids: list[str]) -> dict[str, tuple[str, str]]:
    """id -> (operator, reason) of the step that dropped it, from the release's lineage table."""
    table = side.table("lineage", ["sample_id", "operator", "verdict", "reason"])
    wanted = pc.and_(pc.is_in(table.column("sample_id"), pa.array(ids)), pc.equal(table.column("verdict"), "dropped"))
    table = table.filter(wanted)
    return {r["sample_id"]: (r["operator"], r["reason"] or "") for r in table.to_pylist()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old", type=Side.parse)
    parser.add_argument("new", type=Side.parse)
    parser.add_argument("--markdown", type=Path, help="also write the list as a Markdown table here")
    args = parser.parse_args()
    old, new = args.old.kept(), args.new.kept()
    old_ids = set(old.column("sample_id").to_pylist())
    new_ids = set(new.column("sample_id").to_pylist())
    only_old, only_new = sorted(old_ids - new_ids), sorted(new_ids - old_ids)
    print(f"{args.old.label}: {len(old_ids):,} kept; {args.new.label}: {len(new_ids):,} kept")
    print(f"kept by the old release only (now dropped): {len(only_old)}; by the new only (now kept): {len(only_new)}")
    rows = []
    for ids, kept_in, dropped_in, change in (
        (only_old, old, args.new, "now dropped"),
        (only_new, new, args.old, "now kept"),
    ):
        if not ids:
            continue
        dropped = _dropped_by(dropped_in, ids)
        picked = kept_in.filter(pc.is_in(kept_in.column("sample_id"), pa.array(ids)))
        for row in sorted(picked.to_pylist(), key=lambda r: r["sample_id"]):
            operator, reason = dropped.get(row["sample_id"], ("?", "?"))
            text = " ".join(row["text"].split())[:70].replace("|", "\\|")
            rows.append((row["sample_id"], change, f"{operator}: {reason}", row["source_dataset"], text))
    for r in rows:
        print(" | ".join(r))
    if args.markdown is not None:
        lines = [
            "| sample_id | change | dropped by (in the other release) | source | text |",
            "|---|---|---|---|---|",
            *(f"| `{r[0]}` | {r[1]} | {r[2]} | {r[3]} | {r[4]} |" for r in rows),
        ]
        args.markdown.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
