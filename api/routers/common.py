"""Parameter types shared by the routers (validated: a bad value is a 422 with a message)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path, Query

from storage.names import NAME_MAX, NAME_PATTERN, SAMPLE_ID_PATTERN

Limit = Annotated[int | None, Query(ge=1, le=1000, description="Page size (default from settings).")]
Offset = Annotated[int, Query(ge=0, le=2**31 - 1, description="Items to skip.")]
Name = Annotated[str, Path(pattern=NAME_PATTERN, max_length=NAME_MAX, description="A dataset or release name.")]
Tag = Annotated[str, Path(pattern=NAME_PATTERN, max_length=NAME_MAX, description="A release tag.")]
VersionNumber = Annotated[int, Path(ge=1, le=2**31 - 1, description="A dataset version number.")]
SampleId = Annotated[str, Path(pattern=SAMPLE_ID_PATTERN, description="A sample's id.")]

DIFF = "diff"  # operationId of GET /diff: resources a diff can start from link to it


def diff_link(description: str, *, base: str, target: str) -> dict[str, Any]:
    """An OpenAPI link to ``GET /diff``; ``base`` and ``target`` are runtime expressions on the response."""
    return {"operationId": DIFF, "parameters": {"base": base, "target": target}, "description": description}
