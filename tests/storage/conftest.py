"""Storage tests: the real Ceph fixtures (session cluster) come from tests/fixtures_ceph.py."""

from tests.fixtures_ceph import ceph_s3, ceph_tier  # noqa: F401  (pytest fixtures, used by name)
