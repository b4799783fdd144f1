"""Operator names as pipeline files spell them, resolved lazily so optional families stay optional."""

from __future__ import annotations

import importlib
from typing import Any

from operators.base import Operator

_REGISTRY: dict[str, str] = {
    "convert": "operators.convert:ConvertOperator",
    "exact_dedupe": "operators.exact_dedupe:ExactDedupe",
    "minhash_dedupe": "operators.minhash:MinHashDedupe",
    "quality": "operators.quality:DefaultQuality",
    "quality_gopher": "operators.quality:GopherQuality",
    "quality_gopher_repetition": "operators.quality:GopherRepetition",
    "quality_c4": "operators.quality:C4Quality",
    "quality_fineweb": "operators.quality:FineWebQuality",
    "quality_zh": "operators.quality:ChineseQuality",
}


def register(name: str, target: str) -> None:
    """Register ``module:Class`` under ``name`` (plugins and later operator families)."""
    _REGISTRY[name] = target


def operator_class(name: str) -> type[Operator]:
    try:
        target = _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown operator {name!r}; known: {sorted(_REGISTRY)}") from None
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def build(name: str, params: dict[str, Any] | None = None) -> Operator:
    return operator_class(name)(params or {})


def names() -> list[str]:
    return sorted(_REGISTRY)
