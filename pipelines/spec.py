"""Pipeline files (TOML or YAML): inputs, operators with params, and the output dataset."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Any

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


class PipelineSpec(_Strict):
    name: str
    engine: EngineName = "local"
    inputs: list[InputSpec]
    operators: list[OperatorSpec] = Field(default_factory=list)
    output: OutputSpec
    base_dir: Path | None = Field(default=None, exclude=True)  # where relative local paths start

    @model_validator(mode="after")
    def _check(self) -> PipelineSpec:
        if not self.inputs:
            raise ValueError("a pipeline needs at least one input")
        if any(op.name == "convert" for op in self.operators):
            raise ValueError("'convert' runs implicitly on raw inputs; configure it on the input instead")
        return self

    @classmethod
    def load(cls, path: str | Path) -> PipelineSpec:
        """The pipeline file at ``path``; a file that does not parse, or that the model refuses, is
        :class:`~lineage.errors.Invalid` with every problem on one line."""
        path = Path(path)
        text = path.read_text(encoding="utf-8")
        try:
            data = yaml.safe_load(text) if path.suffix in (".yaml", ".yml") else tomllib.loads(text)
            spec = cls.model_validate(data)
        except ValidationError as exc:
            raise Invalid(f"pipeline file {path}: {validation_problems(exc)}") from None
        except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
            raise Invalid(f"pipeline file {path} does not parse: {' '.join(str(exc).split())}") from None
        spec.base_dir = path.resolve().parent
        return spec
