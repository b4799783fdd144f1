"""Training-side reads of releases and their training exports: deterministic, sharded, resumable."""

from lineage.reader.export_reader import ExportReader
from lineage.reader.opening import open_release
from lineage.reader.release_reader import ReleaseReader

__all__ = ["ExportReader", "ReleaseReader", "open_release"]
