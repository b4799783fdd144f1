"""Storage tests: the real Ceph fixtures (session cluster) come from tests/fixtures_ceph.py.

If tests/conftest.py imports ``ceph_s3``/``ceph_tier`` too, delete this import: two definitions
of a session fixture in two conftests start two clusters.
"""

from tests.fixtures_ceph import ceph_s3, ceph_tier  # noqa: F401  (pytest fixtures, used by name)
