"""Releases: publishing, manifests, the QC gate, replicas across tiers, placement, usage and export.

- :mod:`~lineage.releases.publishing` — publish, draft, deprecate (``name@tag``, immutable);
- :mod:`~lineage.releases.manifest` — the manifest read back from storage, and the content digest;
- :mod:`~lineage.releases.qc` — the QC report and the publish gate;
- :mod:`~lineage.releases.replicas` and :mod:`~lineage.releases.transfers` — copies on other
  tiers, and the per-file copy on an engine;
- :mod:`~lineage.releases.placement`, :mod:`~lineage.releases.usage`, :mod:`~lineage.releases.export`.

The names below were the public names of the former ``lineage/releases.py`` module and stay
importable from here. Modules of this package import each other directly, never this file.
"""

from lineage.catalog.queries import get_release, parse_ref
from lineage.errors import ReleaseError, ReleaseNotFound
from lineage.releases.manifest import MANIFEST_FORMAT, build_manifest, content_digest
from lineage.releases.publishing import (
    DEPRECATED,
    DRAFT,
    LIVE_STATES,
    PUBLISHED,
    WITHDRAWN,
    ReleaseConflict,
    check_servable,
    deprecate,
    primary_replica,
    publish,
    publish_draft,
    withdraw,
)

__all__ = [
    "DEPRECATED",
    "DRAFT",
    "LIVE_STATES",
    "MANIFEST_FORMAT",
    "PUBLISHED",
    "WITHDRAWN",
    "ReleaseConflict",
    "ReleaseError",
    "ReleaseNotFound",
    "build_manifest",
    "check_servable",
    "content_digest",
    "deprecate",
    "get_release",
    "parse_ref",
    "primary_replica",
    "publish",
    "publish_draft",
    "withdraw",
]
