"""Operator names as pipeline files spell them, resolved lazily so optional families stay optional."""

from __future__ import annotations

import importlib
from typing import Any

from operators.base import Operator
from storage.errors import Invalid

_REGISTRY: dict[str, str] = {
    "convert": "operators.convert:ConvertOperator",
    "decontaminate": "operators.contamination.operator:Decontaminate",
    "exact_dedupe": "operators.exact_dedupe:ExactDedupe",
    "minhash_dedupe": "operators.minhash:MinHashDedupe",
}
# Families that keep their own name -> class map (loaded only when a name is not found above).
_FAMILIES = ("operators.quality:OPERATORS",)


def _family_classes() -> dict[str, type[Operator]]:
    found: dict[str, type[Operator]] = {}
    for target in _FAMILIES:
        module, _, attr = target.partition(":")
        found.update(getattr(importlib.import_module(module), attr))
    return found


def register(name: str, target: str) -> None:
    """Register ``module:Class`` under ``name`` (plugins and later operator families)."""
    _REGISTRY[name] = target


def operator_class(name: str) -> type[Operator]:
    target = _REGISTRY.get(name)
    if target is None:
        family = _family_classes()
        if name not in family:
            raise Invalid(f"unknown operator {name!r}; known: {names()}")
        return family[name]
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def build(name: str, params: dict[str, Any] | None = None) -> Operator:
    return operator_class(name)(params or {})


def names() -> list[str]:
    return sorted({*_REGISTRY, *_family_classes()})
