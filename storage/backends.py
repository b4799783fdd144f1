"""Per-kind construction of pyarrow filesystems and deltalake storage options.

One place maps a :class:`TierConfig` to both clients, so pyarrow and delta-rs always see the same
endpoint, region and credentials. Credentials come only from the environment variables named in
``credentials_env``; a named but unset variable is an error (not a silent anonymous client). The
variables are looked up in this process's environment unless an ``environ`` mapping is given (a
copy task on an executor gets the values its driver resolved that way, see
:mod:`storage.transfer_task`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

import pyarrow.fs as pafs

from storage.config import TierConfig
from storage.errors import ConfigError, Invalid
from storage.hdfs import hdfs_filesystem
from storage.s3_put import UnsignedPut

log = logging.getLogger(__name__)

# credentials_env key -> deltalake storage option
S3_CREDENTIAL_OPTIONS = {
    "access_key": "AWS_ACCESS_KEY_ID",
    "secret_key": "AWS_SECRET_ACCESS_KEY",
    "session_token": "AWS_SESSION_TOKEN",
}
DEFAULT_S3_REGION = "us-east-1"


def _credential(config: TierConfig, key: str, environ: Mapping[str, str] | None = None) -> str | None:
    var = config.credentials_env.get(key)
    if var is None:
        return None
    value = (os.environ if environ is None else environ).get(var)
    if value is None:
        raise ConfigError(f"tier {config.name!r}: environment variable {var} ({key}) is not set")
    return value


def _s3_region(config: TierConfig) -> str:
    # "local" is the settings default for tiers that have no region; RGW accepts any name.
    return config.region if config.region and config.region != "local" else DEFAULT_S3_REGION


def _s3_endpoint(config: TierConfig) -> tuple[str, str]:
    """(scheme, host[:port]) of the tier's S3 endpoint; ("https", "") means AWS itself."""
    endpoint = config.options.get("endpoint", "").rstrip("/")
    if not endpoint:
        return "https", ""
    scheme, sep, host = endpoint.partition("://")
    if not sep or scheme not in ("http", "https") or not host or "/" in host:
        raise ConfigError(f"tier {config.name!r}: endpoint must be http(s)://host[:port], got {endpoint!r}")
    return scheme, host


def make_filesystem(config: TierConfig, environ: Mapping[str, str] | None = None) -> pafs.FileSystem:
    """The pyarrow filesystem for a tier (addressed with ``Tier.path``)."""
    if config.kind == "posix":
        return pafs.LocalFileSystem()
    if config.kind == "s3":
        # Ceph RGW rejects the checksum trailers the AWS SDK inside pyarrow sends on multipart
        # uploads (HTTP 411); the SDK reads this variable whenever it builds a client.
        if os.environ.setdefault("AWS_REQUEST_CHECKSUM_CALCULATION", "WHEN_REQUIRED") != "WHEN_REQUIRED":
            log.warning("AWS_REQUEST_CHECKSUM_CALCULATION is set otherwise: multipart uploads to RGW may fail")
        scheme, host = _s3_endpoint(config)
        return pafs.S3FileSystem(
            access_key=_credential(config, "access_key", environ),
            secret_key=_credential(config, "secret_key", environ),
            session_token=_credential(config, "session_token", environ),
            endpoint_override=host or None,
            scheme=scheme,
            region=_s3_region(config),
            allow_bucket_creation=True,
        )
    if config.kind == "hdfs":
        try:
            return hdfs_filesystem(config.root, config.options)
        except Invalid as exc:
            raise ConfigError(f"tier {config.name!r}: {exc}") from None
    raise ConfigError(f"unknown tier kind {config.kind!r}")


def make_uploader(config: TierConfig, environ: Mapping[str, str] | None = None) -> UnsignedPut | None:
    """The single-PUT uploader for tier copies (see :mod:`storage.s3_put`): S3 tiers with their own
    endpoint and static credentials only; anything else copies through pyarrow."""
    if config.kind != "s3":
        return None
    scheme, host = _s3_endpoint(config)
    access_key, secret_key = _credential(config, "access_key", environ), _credential(config, "secret_key", environ)
    if not host or not access_key or not secret_key:
        return None
    return UnsignedPut(
        f"{scheme}://{host}",
        _s3_region(config),
        access_key,
        secret_key,
        _credential(config, "session_token", environ),
    )


def make_storage_options(config: TierConfig, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """deltalake (delta-rs) storage options for a tier (addressed with ``Tier.uri``)."""
    if config.kind == "posix":
        return {}
    if config.kind == "hdfs":
        # delta-rs hands these to hdfs-native as Hadoop configuration, as hdfs_filesystem does.
        return dict(config.options)
    if config.kind == "s3":
        scheme, host = _s3_endpoint(config)
        opts = {"AWS_REGION": _s3_region(config)}
        if host:
            opts["AWS_ENDPOINT_URL"] = f"{scheme}://{host}"
        if scheme == "http":
            opts["AWS_ALLOW_HTTP"] = "true"
        for key, option in S3_CREDENTIAL_OPTIONS.items():
            value = _credential(config, key, environ)
            if value:
                opts[option] = value
        return opts
    raise ConfigError(f"unknown tier kind {config.kind!r}")
