"""Where a pipeline's mixture and dedupe priorities join its operators: the one place for every engine.

:func:`pipelines.execute.plan` calls :func:`operators_of`, so the in-process, Spark and Ray engines
all run the same operator list; the mixture is a :class:`~operators.mixture.Mixture` group step,
last (``apply = "after"``, the default: weights are shares of what survived dedupe and quality) or
first (``"before"``).

A source is a pipeline input. Its samples are recognised by ``source_dataset``: a raw input's is
its own name, a catalog input's are the source datasets of that version (``members``, resolved by
the caller from the catalog).
"""

from __future__ import annotations

from typing import Any

from operators import registry
from operators.base import Operator
from operators.exact_dedupe import ExactDedupe
from operators.minhash import MinHashDedupe
from operators.mixture import Mixture
from pipelines.spec import PipelineSpec
from storage.errors import Invalid

Members = dict[str, list[str]]  # input dataset -> the source_dataset values of its samples


def members_of(spec: PipelineSpec, members: Members | None = None) -> Members:
    members = members or {}
    return {inp.dataset: list(members.get(inp.dataset) or [inp.dataset]) for inp in spec.inputs}


def mixture_of(spec: PipelineSpec, members: Members | None = None) -> Mixture | None:
    m = spec.mixture
    if m is None:
        return None
    groups = members_of(spec, members)
    sources = {
        inp.dataset: {
            "weight": inp.weight,
            "max_share": inp.max_share,
            "max_epochs": inp.max_epochs,
            "members": groups[inp.dataset],
        }
        for inp in spec.inputs
    }
    tokenizer = None
    if m.tokenizer is not None:
        path = m.tokenizer.path
        if spec.base_dir is not None and not path.startswith(("/", "~")):
            path = str(spec.base_dir / path)
        tokenizer = {"path": path, "digest": m.tokenizer.hexdigest}
    return Mixture(
        {
            "sources": sources,
            "unit": m.unit,
            "total": m.total,
            "seed": m.seed,
            "tokenizer": tokenizer,
            "redistribute": m.redistribute,
        }
    )


def priorities(spec: PipelineSpec, members: Members | None = None) -> dict[str, int]:
    """source_dataset -> its input's priority; empty when no input sets one (the default order)."""
    if not any(inp.priority for inp in spec.inputs):
        return {}
    groups = members_of(spec, members)
    return {member: inp.priority for inp in spec.inputs for member in groups[inp.dataset]}


def operators_of(spec: PipelineSpec, members: Members | None = None) -> list[Operator]:
    """The run's operators in order: the file's, with dedupe priorities, and the mixture step."""
    ranks = priorities(spec, members)
    ops: list[Operator] = []
    for op in spec.operators:
        params: dict[str, Any] = dict(op.params)
        if ranks and registry.operator_class(op.name) in (ExactDedupe, MinHashDedupe):
            if "priority" in params:
                raise Invalid(f"{op.name}: set priority on the inputs, not as a parameter")
            params["priority"] = ranks
        ops.append(registry.build(op.name, params))
    mixture = mixture_of(spec, members)
    if mixture is not None:
        ops = [mixture, *ops] if spec.mixture is not None and spec.mixture.apply == "before" else [*ops, mixture]
    return ops
