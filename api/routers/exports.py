"""Training exports (``lineage export --format megatron|mds``): the catalog's record, and sequence-level
lineage (which samples make up a sequence; which sequences hold a sample). Writing and verifying an
export reads the tiers, so those run in-process only."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query

from api.deps import CallerFirstRoute, Reader, ServiceDep
from api.routers.common import Limit, Offset, SampleId
from lineage.service import schemas as S
from storage.names import RELEASE_REF_PATTERN

router = APIRouter(tags=["exports"], route_class=CallerFirstRoute)

ExportId = Annotated[str, Path(pattern=r"^[0-9a-f]{32}$", description="The export's id (xxh3-128, hex).")]


@router.get("/exports", response_model=S.Page[S.ExportOut])
def list_exports(
    service: ServiceDep,
    _: Reader,
    limit: Limit = None,
    offset: Offset = 0,
    release: Annotated[str | None, Query(pattern=RELEASE_REF_PATTERN, description="NAME@TAG")] = None,
) -> Any:
    return service.list_exports(limit, offset, release=release)


@router.get("/exports/{export_id}", response_model=S.ExportOut)
def get_export(export_id: ExportId, service: ServiceDep, _: Reader) -> Any:
    """The export and its manifest: shards and sequence-lineage tables with checksums, tokens per source."""
    return service.get_export(export_id)


@router.get("/exports/{export_id}/sequences/{sequence}", response_model=S.ExportSequence)
def export_sequence(
    export_id: ExportId, sequence: Annotated[int, Path(ge=0)], service: ServiceDep, _: Reader
) -> S.ExportSequence:
    """Which samples make up global sequence ``sequence``, each with its token span."""
    return service.export_sequence(export_id, sequence)


@router.get("/exports/{export_id}/samples/{sample_id}/sequences", response_model=S.SampleSequences)
def sample_sequences(export_id: ExportId, sample_id: SampleId, service: ServiceDep, _: Reader) -> S.SampleSequences:
    """Which sequences of the export hold the sample's tokens."""
    return service.sample_sequences(export_id, sample_id)


@router.get("/exports/{export_id}/steps/{step}", response_model=S.TrainingStep)
def training_step(
    export_id: ExportId,
    step: Annotated[int, Path(ge=0)],
    service: ServiceDep,
    _: Reader,
    seed: Annotated[int, Query(ge=0, description="The job's data seed.")],
    sequence_length: Annotated[int, Query(ge=1)],
    global_batch_size: Annotated[int, Query(ge=1)],
    train_samples: Annotated[int, Query(ge=1, description="Iterations times global batch size.")],
) -> S.TrainingStep:
    """Which samples were in global step ``step`` of a Megatron job reading the export (GPTDataset's order)."""
    return service.training_step(
        export_id,
        step,
        seed=seed,
        sequence_length=sequence_length,
        global_batch_size=global_batch_size,
        train_samples=train_samples,
    )


@router.get("/exports/{export_id}/reader-steps/{step}", response_model=S.ReaderStep)
def reader_step(
    export_id: ExportId,
    step: Annotated[int, Path(ge=0)],
    service: ServiceDep,
    _: Reader,
    seed: Annotated[int, Query(ge=0, description="The job's reader seed.")],
    world_size: Annotated[int, Query(ge=1)],
    batch_size: Annotated[int, Query(ge=1, description="Per rank: the DataLoader's batch size.")],
    epoch: Annotated[int, Query(ge=0)] = 0,
    num_workers: Annotated[int, Query(ge=0, le=1024)] = 0,
    drop_last: bool = False,
    shuffle: bool = True,
    remainder: Annotated[Literal["drop", "pad"], Query()] = "drop",
    window_blocks: Annotated[int, Query(ge=1)] = 4,
    block_sequences: Annotated[int, Query(ge=1)] = 256,
) -> S.ReaderStep:
    """Which samples were in global step ``step`` of a job that read the export with our reader
    (``open_release(ref, export=ID)`` or the torch ``ReleaseDataset``): each rank's batch ``step``."""
    job = S.ReaderJob(
        seed=seed,
        world_size=world_size,
        batch_size=batch_size,
        epoch=epoch,
        num_workers=num_workers,
        drop_last=drop_last,
        shuffle=shuffle,
        remainder=remainder,
        window_blocks=window_blocks,
        block_sequences=block_sequences,
    )
    return service.reader_step(export_id, step, job)
