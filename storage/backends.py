"""Per-kind construction of pyarrow filesystems and deltalake storage options."""

from __future__ import annotations

import os

import pyarrow.fs as pafs

from lineage.settings import TierConfig


def _credential(config: TierConfig, key: str) -> str | None:
    var = config.credentials_env.get(key)
    if var is None:
        return None
    value = os.environ.get(var)
    if value is None:
        raise KeyError(f"tier {config.name!r}: environment variable {var} ({key}) is not set")
    return value


def make_filesystem(config: TierConfig) -> pafs.FileSystem:
    if config.kind == "posix":
        return pafs.LocalFileSystem()
    if config.kind == "s3":
        # Ceph RGW rejects the AWS SDK's checksum trailers on multipart uploads.
        os.environ.setdefault("AWS_REQUEST_CHECKSUM_CALCULATION", "WHEN_REQUIRED")
        endpoint = config.options.get("endpoint", "")
        scheme = "https" if endpoint.startswith("https://") else "http"
        return pafs.S3FileSystem(
            access_key=_credential(config, "access_key"),
            secret_key=_credential(config, "secret_key"),
            endpoint_override=endpoint.split("://", 1)[-1] or None,
            scheme=scheme,
            region=config.region if config.region != "local" else "us-east-1",
            allow_bucket_creation=True,
        )
    if config.kind == "hdfs":
        from storage.hdfs import HdfsNativeFileSystem

        return HdfsNativeFileSystem.for_uri(config.root)
    raise ValueError(f"unknown tier kind {config.kind!r}")


def make_storage_options(config: TierConfig) -> dict[str, str]:
    if config.kind in ("posix", "hdfs"):
        return {}
    if config.kind == "s3":
        opts = {
            "AWS_ENDPOINT_URL": config.options.get("endpoint", ""),
            "AWS_REGION": config.region if config.region != "local" else "us-east-1",
            "AWS_ALLOW_HTTP": "true",
        }
        access, secret = _credential(config, "access_key"), _credential(config, "secret_key")
        if access:
            opts["AWS_ACCESS_KEY_ID"] = access
        if secret:
            opts["AWS_SECRET_ACCESS_KEY"] = secret
        return {k: v for k, v in opts.items() if v}
    raise ValueError(f"unknown tier kind {config.kind!r}")
