"""All configuration in one place: environment variables (``LINEAGE_*``) and an optional TOML file.

The lower layers own the models of their parts (:mod:`storage.config` the tiers,
:mod:`pipelines.config` the engines and a run's execution knobs) and never import this module;
:class:`Settings` composes them and keeps every ``LINEAGE_*`` name.

Precedence, highest first: explicit keyword arguments, environment, the TOML file named by
``LINEAGE_CONFIG`` (default ``$LINEAGE_HOME/lineage.toml``), then the defaults below. Sources are merged
key by key: a table (``[engine]``, ``LINEAGE_ENGINE__SPARK_MASTER``) adds to the one below it, a value
replaces it.

The environment, as this module reads it:

* ``LINEAGE_<SETTING>``, the name in any case. A setting that holds a table or a list (``tiers``,
  ``engine``, ``placement``) takes JSON; any other takes the string, which the model converts
  (``LINEAGE_CORES=2``, ``LINEAGE_SINGLE_USER=true``).
* ``LINEAGE_<SETTING>__<KEY>[__<KEY>...]`` sets one key of a table (``LINEAGE_ENGINE__SPARK_MASTER=yarn``);
  a key that holds a table or list takes JSON there too.
* A value that should be JSON and is not is refused, naming the variable.

Why not pydantic-settings, which read the same names before: for the two sources used here it imported
asyncio, pydantic's dataclasses and a dozen sources of its own in every ``lineage`` command. Measured on the
2-core VM (2026-12-08): importing this module and loading the settings took 0.100 s against 0.125 s (best of
6), and a ``lineage`` command's start-up 0.48 s against 0.53 s (median of 12, interleaved). And a variable
that was not JSON escaped the CLI as a traceback (its ``SettingsError``); here it is a ``ConfigError``.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from types import UnionType
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator

from pipelines.config import EngineConfig, ExecutionConfig
from storage.config import PoolName, TierClass, TierConfig, TierKind
from storage.errors import ConfigError, validation_problems

__all__ = [
    "EngineConfig",
    "ExecutionConfig",
    "PlacementPolicy",
    "Settings",
    "TierClass",
    "TierConfig",
    "TierKind",
    "get_settings",
]


class PlacementPolicy(BaseModel):
    """Hot/cold rules for `lineage tier plan|apply`."""

    hot_tier: str = "local"
    cold_tier: str | None = None  # None: nothing ever goes cold
    cold_after_days: int = 30  # a release unused (no reads, no pin) this long goes cold


ENV_PREFIX = "LINEAGE_"
ENV_NESTED = "__"  # between a table's name and its key in a variable's name


class Settings(BaseModel):
    """Every setting. ``Settings(**values)`` reads the environment and the settings file too (module docstring)."""

    # defaults are validated as set values are (``home`` is resolved either way)
    model_config = ConfigDict(extra="ignore", validate_default=True)

    def __init__(self, **values: Any) -> None:
        super().__init__(**merged(from_file(), from_environment(type(self)), values))

    home: Path = Path(".lineage")
    catalog_url: str | None = None  # default: sqlite under home
    default_tier: str = "local"
    tiers: list[TierConfig] = Field(default_factory=list)
    engine: EngineConfig = Field(default_factory=EngineConfig)
    placement: PlacementPolicy = Field(default_factory=PlacementPolicy)

    # runner defaults (a record's size limit and the raw bytes kept of a quarantined one are convert's
    # parameters, per input: ``convert: {max_record_bytes: ...}`` in the pipeline file). Each is at least 1:
    # 0 or less made a run fail half-way with a traceback (Arrow's, DuckDB's)
    batch_rows: int = Field(default=4096, ge=1)
    duckdb_memory_limit: str = "256MB"
    # row groups are the training reader's shuffle blocks: its window holds a few of them in memory
    parquet_row_group_rows: int = Field(default=16384, ge=1)
    parquet_row_group_bytes: int = Field(default=32 * 1024 * 1024, ge=1)  # of Arrow data; long documents: fewer rows
    parquet_file_rows: int = Field(default=1_000_000, ge=1)
    group_partition_rows: int = Field(default=250_000, ge=1)  # rows of key columns a group step holds at once
    sort_bucket_bytes: int = Field(default=64 * 1024 * 1024, ge=1)  # final sorts run per sample-id bucket this big
    cores: int | None = Field(default=None, ge=1)  # cores an in-process run may keep busy; None = the machine's
    # the allocator of every Arrow buffer in a process that builds the service (why: storage.arrow_pool)
    arrow_memory_pool: PoolName = "jemalloc"

    # HTTP service (``lineage serve``)
    api_host: str = "127.0.0.1"
    api_port: int = Field(default=8765, ge=1, le=65535)
    # Single-user mode: a request without a token acts as ``api_local_user`` (with the admin role) when
    # all three hold: this is true, no token exists in the catalog, and the request's peer address (the
    # socket's, never a proxy header) is loopback. None (unset) is off, except that ``lineage serve``
    # bound to a loopback address turns it on; ``uvicorn --factory api.app:create_app`` never does.
    single_user: bool | None = None
    api_local_user: str = "local"  # who single-user mode records as the actor
    # how long a verified token is trusted without asking the catalog again: a token revoked by another
    # process stops working within this time (in the revoking process, at once)
    api_token_cache_seconds: float = Field(default=0.5, ge=0, le=1)
    api_page_limit: int = Field(default=100, ge=1, le=1000)  # default page size of list endpoints
    api_warm_on_start: bool = True  # load the lineage graph and released Delta versions in the background
    openlineage_namespace: str = "lineage-ledger"  # namespace of our datasets and jobs in OpenLineage events

    # `lineage export --format megatron|mds`: the largest shard file, unless --shard-size says otherwise
    export_shard_size: int = Field(default=64 << 20, ge=1024, lt=1 << 32)

    # training reader: with a service URL, ``open_release`` gets manifests from the HTTP service, not the catalog
    service_url: str | None = None  # e.g. "http://lineage.internal:8765"
    service_token: SecretStr | None = None  # its bearer token (the reader role is enough); best set in the env
    # windows that ranks of one node both read are decoded once and shared here (None: never)
    reader_shared_dir: Path | None = Path("/dev/shm/lineage-windows")

    @model_validator(mode="after")
    def _defaults(self) -> Settings:
        self.home = self.home.expanduser().resolve()
        if self.catalog_url is None:
            self.catalog_url = f"sqlite:///{self.home / 'catalog.db'}"
        if not any(t.name == "local" for t in self.tiers):
            self.tiers.append(TierConfig(name="local", kind="posix", root=str(self.home / "data")))
        return self

    @property
    def staging_dir(self) -> Path:
        """Scratch space for runs (local disk); never holds anything a reader needs."""
        return self.home / "staging"

    def execution(self) -> ExecutionConfig:
        """What a run's engine and its tasks read: no catalog URL, no token (tasks pickle it)."""
        return ExecutionConfig(
            batch_rows=self.batch_rows,
            duckdb_memory_limit=self.duckdb_memory_limit,
            parquet_row_group_rows=self.parquet_row_group_rows,
            parquet_row_group_bytes=self.parquet_row_group_bytes,
            parquet_file_rows=self.parquet_file_rows,
            group_partition_rows=self.group_partition_rows,
            sort_bucket_bytes=self.sort_bucket_bytes,
            staging_dir=self.staging_dir,
            engine=self.engine.model_copy(deep=True),
            cores=max(1, self.cores or os.cpu_count() or 1),
        )

    def with_values(self, **changes: Any) -> Settings:
        """A copy with ``changes``, checked as every setting is (``model_copy`` checks nothing): a value out of
        range is a :class:`ConfigError`. The environment and the settings file are not read again."""
        try:
            return type(self).model_validate({**dict(self), **changes})
        except ValidationError as exc:
            raise ConfigError(f"lineage settings: {validation_problems(exc)}") from None

    def tier_config(self, name: str | None = None) -> TierConfig:
        name = name or self.default_tier
        for tier in self.tiers:
            if tier.name == name:
                return tier
        known = ", ".join(t.name for t in self.tiers)
        raise ConfigError(f"unknown tier {name!r} (configured tiers: {known})")


def settings_file() -> Path | None:
    """The TOML file settings are read from: ``LINEAGE_CONFIG``, else ``$LINEAGE_HOME/lineage.toml`` if it exists."""
    explicit = os.environ.get("LINEAGE_CONFIG")
    if explicit:
        return Path(explicit)
    candidate = Path(os.environ.get("LINEAGE_HOME", ".lineage")).expanduser() / "lineage.toml"
    return candidate if candidate.exists() else None


def unknown_keys(model: type[BaseModel], data: Any, prefix: str = "") -> list[str]:
    """Keys of ``data`` (a TOML table) that ``model`` has no field for, at any depth (``tiers.0.kindd``):
    the models ignore what they do not know (environment variables share the ``LINEAGE_`` prefix), so a
    misspelt key in the file would otherwise change nothing, silently."""
    if not isinstance(data, dict):
        return []
    fields = {name: f for name, f in model.model_fields.items()}
    fields |= {f.alias: f for f in model.model_fields.values() if f.alias}
    unknown = []
    for key, value in data.items():
        if key not in fields:
            unknown.append(f"{prefix}{key}")
            continue
        inner = _model_in(fields[key].annotation)
        if inner is None:
            continue
        items = enumerate(value) if isinstance(value, list) else [(None, value)]
        for i, item in items:
            unknown += unknown_keys(inner, item, f"{prefix}{key}." + ("" if i is None else f"{i}."))
    return unknown


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The model a field holds, alone, in a list or optional; None for any other type."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next((m for m in map(_model_in, get_args(annotation)) if m is not None), None)


def from_file() -> dict[str, Any]:
    """The values in :func:`settings_file`; a file that does not parse, or has a key no setting has, is refused."""
    path = settings_file()
    if path is None:
        return {}
    if not path.exists():
        raise ConfigError(f"LINEAGE_CONFIG points at {path}, which does not exist")
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"settings file {path} does not parse: {' '.join(str(exc).split())}") from None
    unknown = unknown_keys(Settings, data)
    if unknown:
        raise ConfigError(f"settings file {path}: no such setting: {', '.join(unknown)}")
    return data


def from_environment(model: type[BaseModel], environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The values the ``LINEAGE_*`` variables set (module docstring), as nested dicts."""
    prefix = ENV_PREFIX.lower()
    found: dict[str, Any] = {}
    for name, raw in sorted((os.environ if environ is None else environ).items()):
        if not name.lower().startswith(prefix):
            continue
        path = name[len(prefix) :].lower().split(ENV_NESTED)
        if not all(path):
            continue  # LINEAGE_ENGINE__ or a doubled delimiter: no key
        annotation = _annotation_at(model, path)
        if annotation is None:
            continue  # names no setting, as a misspelt key of a table would: the model ignores those too
        value: Any = raw
        if _takes_json(annotation):
            try:
                value = json.loads(raw)
            except json.JSONDecodeError as exc:
                # the value is not echoed: a tier's JSON may hold a credential
                raise ConfigError(f"{name} must be JSON ({exc.msg} at character {exc.pos})") from None
        table = found
        for key in path[:-1]:
            inner = table.get(key)
            table[key] = inner = inner if isinstance(inner, dict) else {}
            table = inner
        key = path[-1]
        if isinstance(table.get(key), dict) and isinstance(value, dict):
            value = merged(value, table[key])  # a table's keys set one by one win over its JSON
        table[key] = value
    return found


_COLLECTIONS = (list, tuple, set, frozenset)  # set whole (JSON), never key by key


def _annotation_at(model: type[BaseModel], path: list[str]) -> Any:
    """The type the setting at ``path`` holds: a field, a field of a table's model, or a value of a dict;
    None when ``path`` names no setting."""
    annotation: Any = model
    for key in path:
        origin = get_origin(annotation)
        if origin is dict:
            annotation = get_args(annotation)[1]
            continue
        table = None if origin in _COLLECTIONS else _model_in(annotation)
        if table is None or key not in table.model_fields:
            return None
        annotation = table.model_fields[key].annotation
    return annotation


def _takes_json(annotation: Any) -> bool:
    """Whether a variable for this type holds JSON: a model, dict, list, tuple or set, alone or optional."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return True
    origin = get_origin(annotation)
    if origin in (Union, UnionType):
        return any(map(_takes_json, get_args(annotation)))
    return origin in (dict, *_COLLECTIONS)


def merged(*sources: Mapping[str, Any]) -> dict[str, Any]:
    """``sources`` merged, later ones winning: key by key where both hold a dict, else the later value."""
    out: dict[str, Any] = {}
    for source in sources:
        for key, value in source.items():
            if isinstance(value, Mapping) and isinstance(out.get(key), dict):
                out[key] = merged(out[key], value)
            else:
                out[key] = value
    return out


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """Process-wide settings; tests call ``get_settings.cache_clear()`` after changing the env. Settings
    the model refuses (a malformed ``LINEAGE_TIERS``, a bad key in the TOML file) are a
    :class:`~lineage.errors.ConfigError`."""
    try:
        return Settings()
    except ValidationError as exc:
        path = settings_file()
        where = f"settings file {path} (or LINEAGE_* variables)" if path is not None else "lineage settings"
        raise ConfigError(f"{where}: {validation_problems(exc)}") from None
