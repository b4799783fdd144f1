"""Operators: Arrow batch in, Arrow batch plus lineage records out. No engine knowledge.

Three shapes cover the product, and each engine adapts exactly these three:

* :class:`SourceOperator` turns a batch of file chunks into samples (+ quarantine).
* :class:`MapOperator` turns a batch of samples into the samples that continue.
* :class:`GroupOperator` decides over complete key groups (dedupe). The engine shuffles the
  operator's ``columns`` by ``key`` so that every sample sharing a key is in one call.

Every operator has a ``name``, a ``version`` (bump it when its output can change) and a
``Params`` dataclass, which is what pipeline files configure.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import pyarrow as pa

from operators.lineage_records import LINEAGE_SCHEMA
from operators.schema import QUARANTINE_SCHEMA, SAMPLE_SCHEMA
from storage.errors import Invalid


@dataclass(frozen=True)
class Params:
    """Base for operator parameters. Subclasses are frozen dataclasses with defaults."""

    @classmethod
    def from_dict(cls, values: dict[str, Any] | None) -> Params:
        values = dict(values or {})
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise Invalid(f"{cls.__qualname__}: unknown parameter(s) {unknown}; known: {sorted(known)}")
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class OperatorOutput:
    """What a map or source step returns for one input batch."""

    samples: pa.RecordBatch
    lineage: pa.RecordBatch
    quarantine: pa.RecordBatch | None = None
    stats: dict[str, int] = dataclasses.field(default_factory=dict)  # extra counters, summed by the engine

    def __post_init__(self) -> None:
        if self.samples.schema != SAMPLE_SCHEMA:
            raise TypeError(f"operator produced samples with schema {self.samples.schema}, not SAMPLE_SCHEMA")
        if self.lineage.schema != LINEAGE_SCHEMA:
            raise TypeError("operator produced lineage records that do not match LINEAGE_SCHEMA")
        if self.quarantine is not None and self.quarantine.schema != QUARANTINE_SCHEMA:
            raise TypeError("operator produced quarantine records that do not match QUARANTINE_SCHEMA")


class Operator(ABC):
    name: ClassVar[str]
    version: ClassVar[str]
    Params: ClassVar[type[Params]] = Params

    def __init__(self, params: Params | dict[str, Any] | None = None) -> None:
        if params is None or isinstance(params, dict):
            params = self.Params.from_dict(params)
        if not isinstance(params, self.Params):
            raise TypeError(f"{self.name}: expected {self.Params.__qualname__}, got {type(params).__name__}")
        self.params = params

    def describe(self) -> dict[str, Any]:
        """What a run records about this operator."""
        return {"name": self.name, "version": self.version, "params": self.params.to_dict()}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.params})"


class SourceOperator(Operator):
    """Reads raw files. Input: a batch of :data:`pipelines.chunks.CHUNK_SCHEMA` rows."""

    @abstractmethod
    def read(self, chunks: pa.RecordBatch) -> Iterator[OperatorOutput]: ...


class MapOperator(Operator):
    """Sample-local work: quality checks, text fixes.

    ``apply`` returns one lineage record per input row, in input order, and as samples the rows
    not ``dropped``, in the same order (engines carry a row key alongside by position).
    """

    # True: ``apply`` may run on several batches at once, on threads of one process, because it keeps
    # no state between calls and its work releases the GIL (numba ``nogil`` kernels, Arrow compute).
    # The local engine then runs a segment of such steps on a thread per core; each batch's output,
    # and so the run's, is the same as one at a time. False (the default) for operators that do not say.
    concurrent: ClassVar[bool] = False

    @abstractmethod
    def apply(self, batch: pa.RecordBatch) -> OperatorOutput: ...


class GroupOperator(Operator):
    """Decisions that need a whole key group at once.

    ``decide`` receives a table of ``columns`` holding *complete* groups of ``key`` (possibly
    several groups, in any order) and returns one lineage record per row, in input order. Rows
    whose verdict is ``dropped`` leave the pipeline; group operators never modify samples.
    """

    key: ClassVar[str]
    columns: ClassVar[tuple[str, ...]]
    # True: ``decide`` sees every row in one call (the mixture, whose targets depend on every
    # source's size). Engines then use one partition for this step.
    whole_input: ClassVar[bool] = False
    # Set: engines first map each batch of ``columns`` through :meth:`prepare` (row-local, in
    # order, one row per row), and ``decide`` sees rows of this schema instead, e.g. sizes rather
    # than texts, so a whole-input step holds no texts.
    prepared_schema: pa.Schema | None = None

    def prepare(self, rows: pa.RecordBatch) -> pa.RecordBatch:
        """Row-local columns ``decide`` needs, one row per row of ``rows`` in order (see ``prepared_schema``)."""
        raise NotImplementedError(f"{self.name} has no prepare step")

    @property
    def decided_columns(self) -> tuple[str, ...]:
        """The columns ``decide`` receives."""
        return tuple(self.prepared_schema.names) if self.prepared_schema is not None else self.columns

    @abstractmethod
    def decide(self, groups: pa.Table) -> pa.RecordBatch: ...


class ClusterOperator(Operator):
    """Near-duplicate clustering over the whole input (MinHash LSH).

    Engines schedule it in stages, none of which holds all candidate pairs:

    1. ``sketch`` (a map): one sketch row per sample (signature, band hashes, text length);
    2. the global step: in-process, ``cluster`` over all sketches; distributed engines group the
       band hashes by bucket (star edges), verify edges, find connected components and call
       ``decide_components`` per group of complete components;
    3. samples the returned lineage marks ``dropped`` leave the pipeline.

    ``published`` sketches (of releases already out) may join the clustering: their samples
    always survive, so a release never loses a sample to a later one.
    """

    sketch_schema: ClassVar[pa.Schema]
    bucket_column: ClassVar[str] = "bands"  # list column of bucket keys; samples sharing one are candidates
    needs_texts: ClassVar[bool] = False  # whether the global step needs the samples' texts
    # whether ``held_sketch`` rows carry what the global step reads of the texts (then ``cluster`` of held
    # sketches needs no texts)
    held_texts: ClassVar[bool] = False
    sketch_columns: ClassVar[tuple[str, ...]] = ("sample_id", "text")  # the sample columns ``sketch`` reads

    @abstractmethod
    def sketch(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """One sketch row per row of ``batch`` (its ``sketch_columns``), in its order."""

    def warm_up(self) -> None:
        """Load now, on the caller's thread, what ``sketch`` loads at its first large batch, for an
        engine with a thread that would otherwise wait for that batch (``lineage dedupe``'s sketcher
        while convert starts). By default there is nothing to load."""

    def held_sketch(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The sketch of ``batch`` (its ``sketch_columns``) as ``cluster`` reads it, for an engine that
        holds every sketch in memory for one ``cluster`` call without ``published`` sketches
        (``lineage dedupe``): by default ``sketch(batch)``; an operator may drop what such a call never
        reads, or keep what it would otherwise make again."""
        return self.sketch(batch)

    @abstractmethod
    def cluster(
        self,
        sketches: pa.Table,
        texts: pa.ChunkedArray | None = None,
        published: pa.Table | None = None,
        fetch_texts: Callable[[pa.Array], pa.ChunkedArray] | None = None,
    ) -> pa.RecordBatch:
        """Lineage records, one per row of ``sketches`` and in its order, for the whole input at once.

        ``texts`` are aligned with ``sketches`` (when ``needs_texts``); ``fetch_texts`` returns the
        texts of published samples by id, in the order asked, so only candidates are loaded.
        """
