"""The base of every service schema, in a module of its own: the file operations (:mod:`lineage.service.files`)
answer with a schema but must not import :mod:`lineage.service.schemas`, which loads the catalog models."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Model(BaseModel):
    """Every service schema: its validator and serializer are built at first use, not at import.
    Building all of them took about 0.2 s of every CLI command's start-up, and a command uses two or three.
    """

    model_config = ConfigDict(defer_build=True)
