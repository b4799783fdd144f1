"""All configuration in one place: environment variables (``LINEAGE_*``) and an optional TOML file.

The lower layers own the models of their parts (:mod:`storage.config` the tiers,
:mod:`pipelines.config` the engines and a run's execution knobs) and never import this module;
:class:`Settings` composes them and keeps every ``LINEAGE_*`` name.

Precedence, highest first: explicit keyword arguments, environment, the TOML file named by
``LINEAGE_CONFIG`` (default ``$LINEAGE_HOME/lineage.toml``), then the defaults below.
"""

from __future__ import annotations

import os
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel, Field, SecretStr, ValidationError, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

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


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="LINEAGE_", env_nested_delimiter="__", extra="ignore")

    home: Path = Path(".lineage")
    catalog_url: str | None = None  # default: sqlite under home
    default_tier: str = "local"
    tiers: list[TierConfig] = Field(default_factory=list)
    engine: EngineConfig = Field(default_factory=EngineConfig)
    placement: PlacementPolicy = Field(default_factory=PlacementPolicy)

    # operator and runner defaults
    batch_rows: int = 4096
    max_record_bytes: int = 8 * 1024 * 1024
    quarantine_raw_bytes: int = 4096
    duckdb_memory_limit: str = "256MB"
    # row groups are the training reader's shuffle blocks: its window holds a few of them in memory
    parquet_row_group_rows: int = 16384
    parquet_row_group_bytes: int = 32 * 1024 * 1024  # of Arrow data; long documents give fewer rows
    parquet_file_rows: int = 1_000_000
    group_partition_rows: int = 250_000  # rows of key columns a group step holds in memory at once
    sort_bucket_bytes: int = 64 * 1024 * 1024  # final sorts run per sample-id bucket of about this size
    cores: int | None = None  # cores an in-process run may keep busy; None = the machine's
    # the allocator of every Arrow buffer in a process that builds the service (why: storage.arrow_pool)
    arrow_memory_pool: PoolName = "jemalloc"

    # HTTP service (``lineage serve``)
    api_host: str = "127.0.0.1"
    api_port: int = 8765
    # Single-user mode: a request without a token acts as ``api_local_user`` (with the admin role) when
    # all three hold: this is true, no token exists in the catalog, and the request's peer address (the
    # socket's, never a proxy header) is loopback. None (unset) is off, except that ``lineage serve``
    # bound to a loopback address turns it on; ``uvicorn --factory api.app:create_app`` never does.
    single_user: bool | None = None
    api_local_user: str = "local"  # who single-user mode records as the actor
    # how long a verified token is trusted without asking the catalog again: a token revoked by another
    # process stops working within this time (in the revoking process, at once)
    api_token_cache_seconds: float = Field(default=0.5, ge=0, le=1)
    api_page_limit: int = 100  # default page size of list endpoints (at most 1000)
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

    def tier_config(self, name: str | None = None) -> TierConfig:
        name = name or self.default_tier
        for tier in self.tiers:
            if tier.name == name:
                return tier
        known = ", ".join(t.name for t in self.tiers)
        raise ConfigError(f"unknown tier {name!r} (configured tiers: {known})")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, _TomlSource(settings_cls))


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


class _TomlSource(PydanticBaseSettingsSource):
    """Reads :func:`settings_file`; refuses a file that does not parse or has keys no setting has."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:  # pragma: no cover
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
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
        unknown = unknown_keys(self.settings_cls, data)
        if unknown:
            raise ConfigError(f"settings file {path}: no such setting: {', '.join(unknown)}")
        return data


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
