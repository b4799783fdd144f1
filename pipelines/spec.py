"""Pipeline files (TOML or YAML): inputs, operators with params, and the output dataset."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from pipelines.engines.base import engine_entry
from storage.errors import Invalid, validation_problems


def _known_engine(name: str) -> str:
    """A name of the engine registry. Whether its extra is installed is checked when a run starts, not
    here: a pipeline file may be validated where the extra is absent."""
    engine_entry(name)
    return name


EngineName = Annotated[str, AfterValidator(_known_engine)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class InputSpec(_Strict):
    """Either raw files (``path``) that become samples of source dataset ``dataset``, or an
    existing catalog dataset (no ``path``), optionally at a given ``version``."""

    dataset: str
    path: str | None = None  # file, folder or glob; relative to ``tier``'s root, or a local path
    tier: str | None = None  # None with a path: a local filesystem path
    format: str = "auto"
    version: int | None = None  # catalog dataset version; None = latest
    text_field: str = "text"
    id_field: str | None = None
    convert: dict[str, Any] = Field(default_factory=dict)  # other ConvertParams
    weight: float | None = Field(default=None, gt=0)  # share in the mixture (needs a [mixture] section)
    max_share: float | None = Field(default=None, gt=0, le=1)  # cap on its share of the mixture's total
    max_epochs: float | None = Field(default=None, ge=1)  # cap on upsampling: copies of each sample, on average
    priority: int = 0  # which copy survives a cross-source duplicate cluster: the highest priority

    @model_validator(mode="after")
    def _check(self) -> InputSpec:
        if self.path is None and (self.tier or self.format != "auto"):
            raise ValueError(f"input {self.dataset!r}: tier/format only apply to raw inputs with a path")
        if self.path is not None and self.version is not None:
            raise ValueError(f"input {self.dataset!r}: version only applies to catalog datasets, not raw paths")
        return self

    @property
    def is_raw(self) -> bool:
        return self.path is not None

    def convert_params(self) -> dict[str, Any]:
        return {"text_field": self.text_field, "id_field": self.id_field, **self.convert}


class OperatorSpec(_Strict):
    name: str
    params: dict[str, Any] = Field(default_factory=dict)


class OutputSpec(_Strict):
    dataset: str
    tier: str | None = None
    description: str = ""
    owner: str = ""
    license: str = ""
    tags: list[str] = Field(default_factory=list)


class TokenizerSpec(_Strict):
    """A tokenizer.json (HF ``tokenizers``, never a hub download), pinned by its xxh3-128 digest."""

    path: str
    digest: str = Field(pattern=r"^(xxh3-128:)?[0-9a-f]{32}$")

    @property
    def hexdigest(self) -> str:
        return self.digest.removeprefix("xxh3-128:")


class MixtureSpec(_Strict):
    """How the inputs are mixed: shares by ``weight`` in ``unit``, to ``total`` or at full proportions.

    ``apply = "after"`` (the default) mixes the samples that survived every operator, so weights are
    shares of the cleaned data; ``"before"`` mixes right after convert, before the operators.
    """

    unit: Literal["samples", "bytes", "words", "tokens"] = "samples"
    total: float | None = Field(default=None, gt=0)  # in ``unit``; None: the largest mix at these proportions
    seed: int = 0
    apply: Literal["after", "before"] = "after"
    tokenizer: TokenizerSpec | None = None
    redistribute: bool = True  # with a total: a capped source's shortfall goes to the others, by weight

    @model_validator(mode="after")
    def _check(self) -> MixtureSpec:
        if self.unit == "tokens" and self.tokenizer is None:
            raise ValueError("mixture: unit 'tokens' needs a tokenizer = {path = ..., digest = ...}")
        if self.unit != "tokens" and self.tokenizer is not None:
            raise ValueError(f"mixture: a tokenizer only applies to unit 'tokens', not {self.unit!r}")
        return self

    def check_shares(self, inputs: dict[str, InputSpec]) -> None:
        """A share capped below its own weight cannot be met at full proportions: refuse it."""
        weights = {name: inp.weight or 0.0 for name, inp in inputs.items()}
        whole = sum(weights.values())
        for name, inp in inputs.items():
            if self.total is None and inp.max_share is not None and inp.max_share < weights[name] / whole:
                raise ValueError(
                    f"mixture: input {name!r} has max_share {inp.max_share} below its share "
                    f"{weights[name] / whole:.4g}; without a total the shares are the weights"
                )


class PipelineSpec(_Strict):
    name: str
    engine: EngineName = "local"
    inputs: list[InputSpec]
    operators: list[OperatorSpec] = Field(default_factory=list)
    mixture: MixtureSpec | None = None
    output: OutputSpec
    base_dir: Path | None = Field(default=None, exclude=True)  # where relative local paths start

    @model_validator(mode="after")
    def _check(self) -> PipelineSpec:
        if not self.inputs:
            raise ValueError("a pipeline needs at least one input")
        if any(op.name == "convert" for op in self.operators):
            raise ValueError("'convert' runs implicitly on raw inputs; configure it on the input instead")
        if any(op.name == "mixture" for op in self.operators):
            raise ValueError("the mixture is set by the [mixture] section and the inputs' weights, not as an operator")
        weighted = [inp.dataset for inp in self.inputs if inp.weight is not None]
        capped = [inp.dataset for inp in self.inputs if inp.max_share is not None or inp.max_epochs is not None]
        if self.mixture is None and (weighted or capped):
            raise ValueError(f"inputs {weighted or capped} set a weight or cap, but there is no [mixture] section")
        if self.mixture is not None:
            names = [inp.dataset for inp in self.inputs]
            if len(set(names)) != len(names):
                raise ValueError(f"mixture: each input is one source, so input datasets must be distinct, got {names}")
            missing = [inp.dataset for inp in self.inputs if inp.weight is None]
            if missing:
                raise ValueError(f"mixture: every input needs a weight; {missing} have none")
            self.mixture.check_shares({inp.dataset: inp for inp in self.inputs})
        return self

    @classmethod
    def load(cls, path: str | Path) -> PipelineSpec:
        """The pipeline file at ``path``; a file that does not parse, or that the model refuses, is
        :class:`~lineage.errors.Invalid` with every problem on one line."""
        path = Path(path)
        try:
            spec = cls.model_validate(read_file(path))
        except ValidationError as exc:
            raise Invalid(f"pipeline file {path}: {validation_problems(exc)}") from None
        spec.base_dir = path.resolve().parent
        return spec


def read_file(path: Path) -> Any:
    """A pipeline file's data (YAML by its suffix, else TOML); one that does not parse is :class:`Invalid`."""
    text = path.read_text(encoding="utf-8")
    try:
        return yaml.safe_load(text) if path.suffix in (".yaml", ".yml") else tomllib.loads(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        raise Invalid(f"pipeline file {path} does not parse: {' '.join(str(exc).split())}") from None
