"""Tier configuration: what a :class:`storage.tier.Tier` is built from.

Storage owns this model; :mod:`lineage.settings` composes a list of them from ``LINEAGE_TIERS``
or the TOML file. Anything that can look a tier up by name (:class:`TierConfigs`, e.g. the
settings) is enough for :func:`storage.tier.get_tier`.
"""

from __future__ import annotations

from typing import Annotated, Literal, Protocol

from pydantic import AfterValidator, BaseModel, Field

from storage.names import check_name

TierKind = Literal["posix", "s3", "hdfs"]
TierClass = Literal["hot", "warm", "cold"]
#: the Arrow memory pools a process can be given (:func:`storage.arrow_pool.use_memory_pool`)
PoolName = Literal["jemalloc", "mimalloc", "system", "arrow-default"]
# Tier names follow the one name grammar (storage.names): they appear in the catalog, in replica
# rows, in CLI arguments (``--to TIER``) and in URL query parameters.
TierName = Annotated[str, AfterValidator(lambda name: check_name(name, "tier"))]


class TierConfig(BaseModel):
    """One storage tier. Credentials are never stored here: ``credentials_env`` names env vars."""

    name: TierName
    kind: TierKind = "posix"
    root: str
    tier_class: TierClass = Field(default="hot", alias="class")
    region: str = "local"
    # kind-specific options, e.g. {"endpoint": "http://127.0.0.1:7480"} for s3
    options: dict[str, str] = Field(default_factory=dict)
    # env var names for credentials, e.g. {"access_key": "CEPH_ACCESS_KEY", "secret_key": "CEPH_SECRET_KEY"}
    credentials_env: dict[str, str] = Field(default_factory=dict)

    model_config = {"populate_by_name": True}


class TierConfigs(Protocol):
    """Where tiers are configured: their config by name (``None``: the default tier)."""

    def tier_config(self, name: str | None = None) -> TierConfig: ...
