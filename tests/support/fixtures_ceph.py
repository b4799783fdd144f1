"""pytest fixtures for a real single-node Ceph cluster (RGW S3 API on loopback).

Use from any conftest or test module::

    # registered for every test by tests/conftest.py (pytest_plugins)

    def test_something(ceph_s3):          # session-wide cluster + bucket
        tier = ceph_s3.tier("releases")   # a Tier rooted at s3://<bucket>/releases-<unique>

    def test_other(ceph_tier):            # a fresh Tier under its own prefix, per test
        ceph_tier.filesystem, ceph_tier.storage_options, ceph_tier.uri("t")

The cluster starts once per pytest session (about 13 s) and is always stopped at the end. If the
Ceph packages are missing the fixture *fails* (run scripts/install-ceph.sh); it never skips.
Set ``LINEAGE_TEST_CEPH_KEEP=1`` to keep the cluster directory (logs) after the session.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from lineage.settings import TierConfig
from storage.tier import Tier
from tests.support.ceph_cluster import CephCluster, CephStartError, CephUnavailableError

log = logging.getLogger(__name__)

ACCESS_KEY_ENV = "LINEAGE_TEST_CEPH_ACCESS_KEY"
SECRET_KEY_ENV = "LINEAGE_TEST_CEPH_SECRET_KEY"
BUCKET = "lineage-test"
REGION = "us-east-1"


@dataclass(frozen=True)
class CephS3:
    """A running RGW endpoint, its credentials (also exported to the environment) and a bucket."""

    endpoint: str
    access_key: str
    secret_key: str
    bucket: str
    region: str
    workdir: Path
    pids: dict[str, int] = field(default_factory=dict)
    start_seconds: float = 0.0

    access_key_env: str = ACCESS_KEY_ENV
    secret_key_env: str = SECRET_KEY_ENV

    def tier_config(self, prefix: str | None = None, name: str = "ceph", tier_class: str = "warm") -> TierConfig:
        """A tier config rooted at ``s3://bucket/<prefix>``; a unique prefix when none is given."""
        prefix = prefix if prefix is not None else f"t-{uuid.uuid4().hex[:12]}"
        root = f"s3://{self.bucket}/{prefix}" if prefix else f"s3://{self.bucket}"
        return TierConfig(
            name=name,
            kind="s3",
            root=root,
            tier_class=tier_class,
            region=self.region,
            options={"endpoint": self.endpoint},
            credentials_env={"access_key": self.access_key_env, "secret_key": self.secret_key_env},
        )

    def tier(self, prefix: str | None = None, name: str = "ceph") -> Tier:
        return Tier(self.tier_config(prefix, name))

    @property
    def storage_options(self) -> dict[str, str]:
        """deltalake storage options for ``s3://<bucket>/...`` URIs."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_REGION": self.region,
            "AWS_ALLOW_HTTP": "true",
        }

    def filesystem(self) -> pafs.S3FileSystem:
        """A pyarrow S3 filesystem addressed as ``<bucket>/key``."""
        return pafs.S3FileSystem(
            access_key=self.access_key,
            secret_key=self.secret_key,
            endpoint_override=self.endpoint.removeprefix("http://"),
            scheme="http",
            region=self.region,
            allow_bucket_creation=True,
        )


@pytest.fixture(scope="session")
def ceph_s3() -> Iterator[CephS3]:
    """Start a real Ceph mon + memstore OSD + radosgw for the session; always stop it."""
    workdir = Path(tempfile.mkdtemp(prefix="lineage-ceph-"))  # short: admin socket paths are limited
    cluster = CephCluster(workdir, die_with_parent=True)
    started = time.monotonic()
    try:
        state = cluster.start()
    except CephUnavailableError as exc:
        shutil.rmtree(workdir, ignore_errors=True)
        pytest.fail(str(exc), pytrace=False)
    except CephStartError as exc:
        pytest.fail(f"Ceph cluster did not start (files kept in {workdir}): {exc}", pytrace=False)
    start_seconds = time.monotonic() - started
    saved = {k: os.environ.get(k) for k in (ACCESS_KEY_ENV, SECRET_KEY_ENV, "AWS_REQUEST_CHECKSUM_CALCULATION")}
    os.environ[ACCESS_KEY_ENV] = state.access_key
    os.environ[SECRET_KEY_ENV] = state.secret_key
    # RGW rejects the AWS SDK's checksum trailers on multipart uploads (see storage.backends).
    os.environ["AWS_REQUEST_CHECKSUM_CALCULATION"] = "WHEN_REQUIRED"
    try:
        ceph = CephS3(
            endpoint=state.endpoint,
            access_key=state.access_key,
            secret_key=state.secret_key,
            bucket=BUCKET,
            region=REGION,
            workdir=workdir,
            pids=dict(state.pids),
            start_seconds=start_seconds,
        )
        ceph.filesystem().create_dir(BUCKET)
        log.info("ceph started in %.1f s at %s", start_seconds, state.endpoint)
        yield ceph
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        stopped = time.monotonic()
        keep = os.environ.get("LINEAGE_TEST_CEPH_KEEP") == "1"
        cluster.stop(remove=not keep)
        log.info("ceph stopped in %.1f s", time.monotonic() - stopped)


@pytest.fixture
def ceph_tier(ceph_s3: CephS3, request: pytest.FixtureRequest) -> Tier:
    """A Tier on the session's cluster under a prefix of its own, so tests never share objects."""
    slug = re.sub(r"[^a-z0-9-]+", "-", request.node.name.lower()).strip("-")[:40]
    return ceph_s3.tier(f"{slug}-{uuid.uuid4().hex[:8]}")
