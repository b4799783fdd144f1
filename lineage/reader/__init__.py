"""Training-side reads of releases: deterministic, sharded, resumable."""

from lineage.reader.release_reader import ReleaseReader, open_release

__all__ = ["ReleaseReader", "open_release"]
