"""The mixture step: per source, which samples a release keeps and how many times each is served.

Every source (a pipeline input) has a weight; the weights are shares of the mixture in one unit
(``samples``, ``bytes``, ``words`` or ``tokens``). A source's target is ``total × share``, capped by
``max_share × total`` and ``max_epochs × available``; what a capped source cannot take is shared
among the others by their weights (:func:`fill`; ``redistribute = False`` leaves it unfilled), so the
mixture reaches ``total`` unless every source is capped. With no ``total`` the mixture is the largest
one that meets the shares exactly without upsampling any source past its ``max_epochs`` (default 1).

**Order.** A source's samples are ordered by :func:`order_keys` (a hash of the seed and the
``sample_id``, ties by ``sample_id``), which depends on neither the engine nor the partitioning.
A source below its target is served ``passes = ⌊target / available⌋`` whole times; the remainder
(all of a downsampled source's target) is the shortest prefix in that order reaching it, so it
overshoots by at most one sample. Samples outside the prefix of a downsampled source are dropped
(reason ``mixture_not_selected``); rows are never copied.

**The rule.** A kept sample's ``repeats`` is ``passes + 1`` if its (key, id) is at or before the
prefix's last, else ``passes``: two numbers and an id per source (:class:`RepeatRule`), which the
manifest stores and the reader and the exports apply (:func:`repeats`) to any subset of samples.

The decision is recorded per sample as rule results (``rule_set = "mixture"``): ``weight``,
``order`` (key ≤ the cut, ``passed`` = in the prefix), ``repeats``, and the sample's size in
bytes, words and, when configured, tokens. ``detail.source.dataset`` names the sample's source
dataset, so the run's summary (:func:`summarise`) needs no other table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from operators.base import GroupOperator, Params
from operators.lineage_records import RULE_RESULT, SOURCE_DETAIL, Verdict, detail_struct, lineage_batch
from storage.errors import Invalid

NAME = "mixture"
REASON = "mixture_not_selected"
UNITS = ("samples", "bytes", "words", "tokens")
KEY_BITS = 53  # order keys fit a float64 exactly, so lineage's rule values hold them without loss
# A word: a run of non-space characters outside CJK scripts, or one CJK character (they have no spaces).
_CJK = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}"
WORD = rf"[{_CJK}]|[^\s\x0b\x1c-\x1f\x{{85}}\p{{Z}}{_CJK}]+"
_EPS = 1e-9


def order_keys(seed: int, sample_ids: pa.Array | pa.ChunkedArray | list[str]) -> np.ndarray:
    """Each sample's place in its source's order: the top 53 bits of xxh3-64(seed, sample_id)."""
    ids = sample_ids.to_pylist() if isinstance(sample_ids, pa.Array | pa.ChunkedArray) else sample_ids
    salt = f"{seed}\x00".encode()
    return np.fromiter(
        (xxhash.xxh3_64_intdigest(salt + i.encode()) >> (64 - KEY_BITS) for i in ids), dtype=np.int64, count=len(ids)
    )


def word_counts(texts: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Words per text: space-separated runs, each CJK character one word."""
    return np.asarray(pc.count_substring_regex(texts, WORD).to_numpy(zero_copy_only=False), dtype=np.int64)


def byte_counts(texts: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return np.asarray(pc.binary_length(texts).to_numpy(zero_copy_only=False), dtype=np.int64)


@dataclass(frozen=True)
class RepeatRule:
    """How many times a source's kept samples are served: ``passes``, plus one up to the cut."""

    passes: int
    cut_key: int | None  # the last sample of the remainder prefix; None: no remainder
    cut_id: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"passes": self.passes, "cut_key": self.cut_key, "cut_id": self.cut_id}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RepeatRule:
        return cls(int(d["passes"]), d.get("cut_key"), d.get("cut_id"))


def repeats(rule: RepeatRule, keys: np.ndarray, sample_ids: list[str]) -> np.ndarray:
    """Copies served of each sample (of the rule's source), in the order given."""
    out = np.full(len(keys), rule.passes, dtype=np.int64)
    if rule.cut_key is None or rule.cut_id is None:
        return out
    below = keys < rule.cut_key
    tie = np.flatnonzero(keys == rule.cut_key)
    for i in tie:  # equal 53-bit keys: ordered by sample_id
        below[i] = sample_ids[i] <= rule.cut_id
    return out + below


@dataclass(frozen=True)
class MixtureParams(Params):
    """``sources``: input name -> {weight, max_share, max_epochs, members (its source datasets)}."""

    sources: dict[str, dict[str, Any]] = field(default_factory=dict)
    unit: str = "samples"
    total: float | None = None
    seed: int = 0
    tokenizer: dict[str, str] | None = None  # {path, digest}: unit "tokens"
    redistribute: bool = True  # with a total: what a capped source cannot take goes to the others

    def __post_init__(self) -> None:
        if self.unit not in UNITS:
            raise Invalid(f"mixture: unit must be one of {', '.join(UNITS)}, not {self.unit!r}")
        if not self.sources:
            raise Invalid("mixture: no sources")
        if self.unit == "tokens" and not self.tokenizer:
            raise Invalid("mixture: unit 'tokens' needs a tokenizer")


@dataclass(frozen=True)
class Plan:
    """Per source: its share of the mixture and its target size in the unit."""

    share: dict[str, float]
    target: dict[str, float]


class Mixture(GroupOperator):
    """A group operator over the whole input at once: targets depend on every source's size."""

    name = NAME
    version = "1"
    Params = MixtureParams
    key = "source_dataset"
    columns = ("sample_id", "source_dataset", "text")
    whole_input = True

    def __init__(self, params: MixtureParams | dict[str, Any] | None = None) -> None:
        super().__init__(params)
        p = self.params
        assert isinstance(p, MixtureParams)
        # the barrier sees ids, sources and sizes, never texts: sizes are measured per batch beforehand
        self.prepared_schema = pa.schema(
            [
                pa.field("sample_id", pa.string(), nullable=False),
                pa.field("source_dataset", pa.string(), nullable=False),
                *(pa.field(u, pa.int64(), nullable=False) for u in UNITS[1:] if u != "tokens" or p.tokenizer),
            ]
        )
        self.member_of: dict[str, str] = {}
        for name, src in p.sources.items():
            for member in src.get("members") or [name]:
                if member in self.member_of:
                    first = self.member_of[member]
                    raise Invalid(f"mixture: source dataset {member!r} is in inputs {first!r} and {name!r}")
                self.member_of[member] = name
        self._tokenizer: Any = None
        if p.tokenizer:  # a wrong or missing file fails the run before any work
            from operators.token_counts import checked_bytes  # extra: the module of the tokens unit

            checked_bytes(p.tokenizer["path"], p.tokenizer["digest"])

    # -- sizes ------------------------------------------------------------------------------
    def measures(self, texts: pa.Array | pa.ChunkedArray) -> dict[str, np.ndarray]:
        """Each sample's size in every unit this mixture reports (tokens only with a tokenizer)."""
        n = len(texts)
        out = {"samples": np.ones(n, dtype=np.int64), "bytes": byte_counts(texts), "words": word_counts(texts)}
        if self.params.tokenizer:  # type: ignore[attr-defined]
            out["tokens"] = self._token_counts(texts)
        return out

    def _token_counts(self, texts: pa.Array | pa.ChunkedArray) -> np.ndarray:
        if self._tokenizer is None:
            from operators.token_counts import load_tokenizer  # extra: tokenizers, for unit "tokens" only

            tok = self.params.tokenizer  # type: ignore[attr-defined]
            self._tokenizer = load_tokenizer(tok["path"], tok["digest"])
        from operators.token_counts import token_counts  # extra: tokenizers, for unit "tokens" only

        return token_counts(self._tokenizer, texts.to_pylist())

    def prepare(self, rows: pa.RecordBatch) -> pa.RecordBatch:
        """Each sample's id, source dataset and size in bytes, words (and tokens)."""
        sizes = self.measures(rows.column("text"))
        columns = [rows.column("sample_id"), rows.column("source_dataset")]
        columns += [pa.array(sizes[f.name], pa.int64()) for f in list(self.prepared_schema)[2:]]
        return pa.RecordBatch.from_arrays(columns, schema=self.prepared_schema)

    # -- targets ----------------------------------------------------------------------------
    def plan(self, available: dict[str, float]) -> Plan:
        """Shares and targets (in the unit) from each source's available size."""
        p = self.params
        assert isinstance(p, MixtureParams)
        weights = {name: float(src["weight"]) for name, src in p.sources.items()}
        whole = sum(weights.values())
        share = {name: w / whole for name, w in weights.items()}
        epochs = {name: src.get("max_epochs") for name, src in p.sources.items()}
        if p.total is None:  # the largest mixture at these shares, no source past its max_epochs
            empty = sorted(n for n in share if available[n] <= 0)
            if empty:
                raise Invalid(
                    f"mixture: source(s) {empty} have no {p.unit} left to mix; without a total the shares "
                    "cannot be met by anything but an empty release (set a total, or drop the input)"
                )
            limits = [(epochs[n] or 1.0) * available[n] / share[n] for n in share]
            total = min(limits) if limits else 0.0
            return Plan(share, {n: share[n] * total for n in share})
        caps = {}
        for name, src in p.sources.items():
            cap = math.inf
            if src.get("max_share") is not None:
                cap = min(cap, src["max_share"] * p.total)
            if epochs[name] is not None:
                cap = min(cap, epochs[name] * available[name])
            caps[name] = cap
        if not p.redistribute:
            return Plan(share, {name: min(p.total * share[name], caps[name]) for name in share})
        return Plan(share, fill(p.total, weights, caps))

    # -- the decision -----------------------------------------------------------------------
    def decide(self, groups: pa.Table) -> pa.RecordBatch:
        p = self.params
        assert isinstance(p, MixtureParams)
        n = groups.num_rows
        ids = groups.column("sample_id").combine_chunks()
        datasets = groups.column("source_dataset").combine_chunks()
        unknown = sorted(set(pc.unique(datasets).to_pylist()) - set(self.member_of))
        if unknown:
            raise Invalid(f"mixture: samples of source dataset(s) {unknown} belong to no weighted input")
        names = np.array([self.member_of[d] for d in datasets.to_pylist()], dtype=object)
        sizes = {"samples": np.ones(n, dtype=np.int64)}
        for f in list(self.prepared_schema)[2:]:
            sizes[f.name] = np.asarray(groups.column(f.name).to_numpy(), dtype=np.int64)
        size = sizes[p.unit].astype(np.float64)
        keys = order_keys(p.seed, ids)
        id_list = ids.to_pylist()
        available = {name: float(size[names == name].sum()) for name in p.sources}
        plan = self.plan(available)
        reps = np.zeros(n, dtype=np.int64)
        in_prefix = np.zeros(n, dtype=bool)
        cut = np.full(n, np.nan)
        for name in p.sources:
            rows = np.flatnonzero(names == name)
            if not len(rows):
                continue
            rule = choose(plan.target[name], available[name], size[rows], keys[rows], [id_list[i] for i in rows])
            reps[rows] = repeats(rule, keys[rows], [id_list[i] for i in rows])
            in_prefix[rows] = reps[rows] > rule.passes
            if rule.cut_key is not None:
                cut[rows] = float(rule.cut_key)
        weight = np.array([float(p.sources[x]["weight"]) for x in names], dtype=np.float64)
        return self._records(ids, datasets, reps, in_prefix, keys, cut, weight, sizes)

    def _records(
        self,
        ids: pa.Array,
        datasets: pa.Array,
        reps: np.ndarray,
        in_prefix: np.ndarray,
        keys: np.ndarray,
        cut: np.ndarray,
        weight: np.ndarray,
        sizes: dict[str, np.ndarray],
    ) -> pa.RecordBatch:
        n = len(ids)
        dropped = reps == 0
        per_sample: list[tuple[str, np.ndarray, np.ndarray | None, str | None, np.ndarray]] = [
            ("weight", weight, None, None, np.ones(n, dtype=bool)),
            ("order", keys.astype(np.float64), cut, "<=", in_prefix),
            ("repeats", reps.astype(np.float64), None, None, ~dropped),
            *((u, sizes[u].astype(np.float64), None, None, np.ones(n, dtype=bool)) for u in UNITS[1:] if u in sizes),
        ]
        k = len(per_sample)
        fields = {
            "rule_set": pa.repeat(pa.scalar(NAME), n * k),
            "rule": pa.array(np.tile(np.array([r[0] for r in per_sample], dtype=object), n), pa.string()),
            "value": pa.array(np.stack([r[1] for r in per_sample], axis=1).reshape(-1), pa.float64()),
            "threshold": pa.array(
                np.stack([r[2] if r[2] is not None else np.full(n, np.nan) for r in per_sample], axis=1).reshape(-1),
                pa.float64(),
                from_pandas=True,
            ),
            "comparison": pa.array(np.tile(np.array([r[3] for r in per_sample], dtype=object), n), pa.string()),
            "passed": pa.array(np.stack([r[4] for r in per_sample], axis=1).reshape(-1), pa.bool_()),
        }
        values = pa.StructArray.from_arrays(list(fields.values()), fields=list(RULE_RESULT))
        rules = pa.ListArray.from_arrays(pa.array(np.arange(0, n * k + 1, k, dtype=np.int32)), values)
        source = pa.StructArray.from_arrays(
            [datasets, *(pa.nulls(n, f.type) for f in list(SOURCE_DETAIL)[1:])], fields=list(SOURCE_DETAIL)
        )
        return lineage_batch(
            operator=self.name,
            operator_version=self.version,
            sample_ids=ids,
            verdicts=pa.array(np.where(dropped, Verdict.DROPPED.value, Verdict.KEPT.value), pa.string()),
            reasons=pc.if_else(pa.array(dropped), pa.scalar(REASON), pa.scalar(None, pa.string())),
            detail=detail_struct(n, source=source, rules=rules),
        )


def fill(total: float, weights: dict[str, float], caps: dict[str, float]) -> dict[str, float]:
    """Targets summing to ``total`` (or to every cap, if less) in proportion to ``weights``, none past its cap.

    Water-filling: a source whose proportional target reaches its cap is held at the cap, and what it
    leaves is shared among the others by their weights, again, until no target passes its cap. Each
    round caps at least one more source, so there are at most as many rounds as sources.
    """
    target: dict[str, float] = {}
    left, open_ = total, dict(weights)
    while open_:
        whole = sum(open_.values())
        over = [name for name, w in open_.items() if left * w / whole >= caps[name]]
        if not over:
            target.update({name: left * w / whole for name, w in open_.items()})
            break
        for name in over:
            target[name] = caps[name]
            left -= caps[name]
            del open_[name]
    return target


def choose(target: float, available: float, size: np.ndarray, keys: np.ndarray, ids: list[str]) -> RepeatRule:
    """The repeat rule meeting ``target`` (in the unit) from samples of ``size`` in (key, id) order."""
    if available <= 0 or target <= 0:
        return RepeatRule(0, None, None)
    passes = math.floor(target / available + _EPS)
    remainder = target - passes * available
    if remainder <= _EPS * max(available, 1.0):
        return RepeatRule(passes, None, None)
    order = pc.sort_indices(
        pa.table({"key": keys, "id": pa.array(ids, pa.string())}), sort_keys=[("key", "ascending"), ("id", "ascending")]
    ).to_numpy()
    cumulative = np.cumsum(size[order])
    k = min(int(np.searchsorted(cumulative, remainder * (1 - _EPS), side="left")) + 1, len(order))
    last = order[k - 1]
    return RepeatRule(passes, int(keys[last]), ids[last])


def summarise(mixture: Mixture, records: pa.Table, survived: np.ndarray) -> dict[str, Any]:
    """The mixture asked for and the one achieved, per source, from the step's lineage ``records``.

    ``records``: ``sample_id``, ``dataset`` (detail.source.dataset) and ``rules`` of the mixture step;
    ``survived``: per record, whether no later step dropped it (``apply = "before"``). Sizes are given
    in every unit: available (all records), selected (kept, surviving), served (× repeats).
    """
    p = mixture.params
    assert isinstance(p, MixtureParams)
    n = records.num_rows
    rules = records.column("rules").combine_chunks()
    flat = rules.flatten()
    k = len(flat) // n if n else 0
    rule_names = flat.field("rule").to_pylist()[:k]
    values = flat.field("value").to_numpy(zero_copy_only=False).reshape(n, k) if n else np.zeros((0, 0))
    col = {name: values[:, i] for i, name in enumerate(rule_names)}
    datasets = records.column("dataset").to_pylist()
    names = np.array([mixture.member_of.get(d, d) for d in datasets], dtype=object)
    ids = records.column("sample_id").to_pylist()
    reps = col["repeats"].astype(np.int64) if n else np.zeros(0, np.int64)
    keys = col["order"].astype(np.int64) if n else np.zeros(0, np.int64)
    units = [u for u in UNITS if u == "samples" or u in col]
    size = {u: (np.ones(n) if u == "samples" else col[u]) for u in units}
    kept = (reps > 0) & survived
    available = {name: {u: float(size[u][names == name].sum()) for u in units} for name in p.sources}
    plan = mixture.plan({name: available[name][p.unit] for name in p.sources})
    served_total = {u: float((size[u] * reps * kept).sum()) for u in units}
    sources: dict[str, Any] = {}
    for name, src in p.sources.items():
        mine = names == name
        sel = mine & kept
        rule = _rule_of(reps[mine & (reps > 0)], keys, ids, mine & (reps > 0))
        served = {u: float((size[u] * reps * sel).sum()) for u in units}
        sources[name] = {
            "members": src.get("members") or [name],
            "requested": {
                "weight": src["weight"],
                "share": plan.share[name],
                "target": plan.target[name],
                "max_share": src.get("max_share"),
                "max_epochs": src.get("max_epochs"),
            },
            "achieved": {
                "available": available[name],
                "selected": {u: float(size[u][sel].sum()) for u in units},
                "served": served,
                "share": {u: (served[u] / served_total[u] if served_total[u] else 0.0) for u in units},
                "epochs": served[p.unit] / available[name][p.unit] if available[name][p.unit] else 0.0,
            },
            "rule": rule.to_dict(),
        }
    return {
        "unit": p.unit,
        "total": p.total,
        "seed": p.seed,
        **({"redistribute": p.redistribute} if p.total is not None else {}),
        "tokenizer": dict(p.tokenizer) if p.tokenizer else None,
        "sources": sources,
        "served": served_total,
    }


def _rule_of(reps: np.ndarray, keys: np.ndarray, ids: list[str], rows: np.ndarray) -> RepeatRule:
    """The repeat rule behind the recorded repeats of one source's selected samples."""
    if not len(reps):
        return RepeatRule(0, None, None)
    passes = int(reps.min())
    extra = np.flatnonzero(rows)[reps > passes] if reps.max() > passes else np.zeros(0, np.int64)
    if reps.max() == passes:  # every selected sample the same: whole passes, or a downsampled prefix
        if passes == 1:
            positions = np.flatnonzero(rows)
            last = max(positions, key=lambda i: (int(keys[i]), ids[i]))
            return RepeatRule(0, int(keys[last]), ids[last])
        return RepeatRule(passes, None, None)
    last = max(extra, key=lambda i: (int(keys[i]), ids[i]))
    return RepeatRule(passes, int(keys[last]), ids[last])


def serving_rules(mixture: dict[str, Any] | None) -> dict[str, Any] | None:
    """How a release's samples are served, from its manifest's ``mixture``: the seed and, per source
    dataset (a sample's ``source_dataset``), its input's repeat rule. None without a mixture."""
    if not mixture:
        return None
    rules = {member: src["rule"] for src in mixture["sources"].values() for member in src["members"]}
    return {"seed": mixture["seed"], "sources": rules}


def served_repeats(rules: dict[str, Any], sample_ids: list[str], source_datasets: list[str]) -> np.ndarray:
    """Copies served of each sample of a release, by :func:`serving_rules`; refuses an unknown source."""
    out = np.ones(len(sample_ids), dtype=np.int64)
    keys = order_keys(int(rules["seed"]), sample_ids)
    names = np.array(source_datasets, dtype=object)
    for name in set(source_datasets):
        rule = rules["sources"].get(name)
        if rule is None:
            raise Invalid(f"the release's mixture has no repeat rule for source dataset {name!r}")
        rows = np.flatnonzero(names == name)
        out[rows] = repeats(RepeatRule.from_dict(rule), keys[rows], [sample_ids[i] for i in rows])
    return out
