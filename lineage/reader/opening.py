"""``open_release``: the one entry point of the training reader, for a release or one of its exports."""

from __future__ import annotations

from typing import Any

from lineage.reader.export_reader import ExportReader
from lineage.reader.release_reader import ReleaseReader


def open_release(ref: str, **kwargs: Any) -> ReleaseReader | ExportReader:
    """Open ``name@tag`` for training: ``rank=``, ``world_size=``, ``seed=``, ``epoch=``,
    ``batch_size=``, ``columns=``, ``as_dicts=``; see :class:`ReleaseReader`.

    The manifest comes from the catalog, or from the HTTP service with ``url=`` and ``token=`` (or
    the ``service_url``/``service_token`` settings, ``LINEAGE_SERVICE_URL``/``LINEAGE_SERVICE_TOKEN``),
    or through a ``client=``; the data files are always read straight from the tiers.
    ``decode_threads=`` overrides how many threads decode row groups (by default, the cores each
    of the node's ``local_world_size`` ranks gets; twice that for an object store).
    ``prefetch=False`` decodes each window when it is asked for, in the consumer's thread, for a
    consumer that overlaps reading with training itself (the torch wrapper does this in DataLoader
    workers).

    With ``export=ID`` (one of the release's training exports, Megatron or MDS), the reader serves the
    export's sequences instead, as ``{"sequence": k, "tokens": ndarray}``, with the same ``rank=``,
    ``world_size=``, ``seed=``, ``epoch=``, ``shuffle=``, ``window_blocks=``, resume and worker split;
    see :class:`~lineage.reader.export_reader.ExportReader`.
    """
    if kwargs.get("export") is not None:
        return ExportReader(ref, **kwargs)
    kwargs.pop("export", None)
    return ReleaseReader(ref, **kwargs)
