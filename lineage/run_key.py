"""The cache key of a run: what its output depends on, in named parts, and their digest.

A stage of a pipeline (``lineage.pipeline_runs``) is skipped on a rerun when its key's digest equals
that of its last succeeded run and that run's output version still exists. The parts:

- ``inputs``: each input's identity, in the file's order, as the run records it. A catalog dataset is
  ``dataset@version`` (an upstream stage's input is the version that stage committed); raw files are
  their tier URI, file count and fingerprint: xxh3-128 over each file's name and stored bytes
  (:func:`resolve_inputs`, :func:`pipelines.sources.fingerprint`);
- ``operators``: the operator names and versions, in order (convert once per raw input);
- ``params``: each operator's params, normalised by the operator's own model (a default written out
  equals one left out);
- ``code_version``: :func:`lineage.version.code_version`, which is the same on every engine;
- ``mixture``: the ``[mixture]`` section and each input's weight, caps and dedupe priority;
- ``output``: the output dataset and tier.

The engine is not a part: every engine writes the same release for the same key (tested).

:func:`run_key` is a pure function of the spec, the resolved inputs and the code version, so any
caller can decide "is this the same run" the same way; :func:`resolve_inputs` is the one place that
reads the catalog and the files to resolve them.
"""

from __future__ import annotations

import json
from functools import cached_property
from typing import Any

import xxhash
from pydantic import BaseModel, ConfigDict
from sqlalchemy.orm import Session

from lineage.catalog.queries import dataset_version, require_data
from operators import registry
from operators.convert import ConvertOperator
from operators.mixture import Mixture
from pipelines.sources import describe_source
from pipelines.spec import PipelineSpec
from storage.config import TierConfigs

PARTS = ("inputs", "operators", "params", "code_version", "mixture", "output")


class RunKey(BaseModel):
    """The parts a run's output depends on; equal digests mean a rerun would write the same output."""

    model_config = ConfigDict(frozen=True)

    inputs: list[dict[str, Any]]
    operators: list[dict[str, str]]
    params: list[dict[str, Any]]
    code_version: str
    mixture: dict[str, Any] | None
    output: dict[str, Any]

    @cached_property
    def digest(self) -> str:
        text = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        return xxhash.xxh3_128_hexdigest(text.encode())

    def changed(self, recorded: dict[str, Any] | None) -> list[str]:
        """The parts that differ from ``recorded`` (an earlier key's :meth:`model_dump`); all of them
        when nothing was recorded."""
        if recorded is None:
            return list(PARTS)
        mine = self.model_dump(mode="json")
        return [part for part in PARTS if _canonical(mine[part]) != _canonical(recorded.get(part))]


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def run_key(spec: PipelineSpec, resolved_inputs: list[dict[str, Any]], code_version: str) -> RunKey:
    """The key of running ``spec`` on ``resolved_inputs`` (from :func:`resolve_inputs`, one per input,
    in order) with the code at ``code_version``. Pure: it reads neither the catalog nor files."""
    described = [ConvertOperator(inp.convert_params()).describe() for inp in spec.inputs if inp.is_raw]
    described += [registry.build(op.name, dict(op.params)).describe() for op in spec.operators]
    mixture = None
    if spec.mixture is not None:
        mixture = {
            **spec.mixture.model_dump(mode="json"),
            "version": Mixture.version,
            "sources": [
                inp.model_dump(mode="json", include={"dataset", "weight", "max_share", "max_epochs"})
                for inp in spec.inputs
            ],
        }
    priorities = {inp.dataset: inp.priority for inp in spec.inputs if inp.priority}
    if priorities:
        mixture = {**(mixture or {}), "priority": priorities}
    return RunKey(
        inputs=resolved_inputs,
        operators=[{"name": d["name"], "version": str(d["version"])} for d in described],
        params=[d["params"] for d in described],
        code_version=code_version,
        mixture=mixture,
        output={"dataset": spec.output.dataset, "tier": spec.output.tier},
    )


def resolve_inputs(spec: PipelineSpec, session: Session, tiers: TierConfigs) -> list[dict[str, Any]]:
    """Each input's identity, as a run records it (``Run.inputs``): a catalog input's resolved
    ``dataset@version``, raw files' fingerprint (:func:`pipelines.sources.describe_source`)."""
    found: list[dict[str, Any]] = []
    for inp in spec.inputs:
        if inp.is_raw:
            found.append(describe_source(inp, spec.base_dir, tiers))
        else:
            dv = require_data(dataset_version(session, inp.dataset, inp.version))
            found.append({"kind": "dataset", "dataset": inp.dataset, "version": dv.version})
    return found
