"""A study job fans out: its planning makes chunks, and any number of workers score them.

**Planning** (:func:`study_job_run`, the job's own task, on the default queue) claims the job,
lists what to compare (:func:`scoring.comparisons.plan`), drops every item whose stored results are
up to date, and cuts the rest into :class:`~scoring.models.ScoreChunk` rows: one metric family
(and judge) over the items of a few whole clips, at most ``SCORING_STUDY_CHUNK_ITEMS[family]``
items. Each chunk holds its texts, so it scores the same thing on any worker. The chunks are
sent as ordinary Celery tasks to their family's queue (``SCORING_QUEUES``); the job's counters
in the database say when it is done (no result backend, no chord).

**Up to date** means the stored row's ``dep_hash`` equals the planned one: a hash of the
candidate, the reference texts and their ids or captions (a leave-out set's members), the
metric version and judge, and for the reference family CIDEr-D's idf documents (the study's
captions). So a second job on an unchanged study scores nothing, and one new final verdict
makes stale only its clip's leave-out sets (and its own verdict items).

**A chunk** (:func:`score_chunk_run`) is claimed with a conditional update (queued; running but
delivered again under the same task id, its worker having died; or running with a heartbeat
older than ``SCORING_JOB_LEASE_SECONDS``) that stores a fresh token. Its rows (upserts on the
result key), its ``done`` status and the job's counters commit in one transaction that first
checks the token, under a lock on the job row: a redelivered or duplicated chunk stores nothing
twice and counts once, and exactly one chunk, the last, finishes the job. A chunk whose family
raised is tried ``SCORING_CHUNK_RETRIES`` more times, then recorded failed (its reason in
``job.errors`` under each of its metrics, naming the chunk) while the others go on; the job then
ends ``partial`` ("partly failed"), or ``failed`` when nothing was stored. Cancelling a job
(:func:`score_job_cancel`) cancels the chunks not yet started.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from annotation.jobs import broker_look, job_send_or_keep, message_lost
from annotation.services.study_state import Write, study_require
from scoring import families
from scoring.comparisons import Item, Unit, idf_documents, plan
from scoring.erasure import rows_not_erased
from scoring.models import ScoreChunk, ScoreJob, ScoreResult
from scoring.services import claim_counts, content_hash, dependency_hash

logger = logging.getLogger(__name__)

Status = ScoreJob.Status
Chunk = ScoreChunk.Status
CHUNK_TASK = "scoring.tasks.run_score_chunk"


# --------------------------------------------------------------------------- items as JSON


def item_payload(item: Any, dep_hash: str) -> dict[str, Any]:
    """An item as a chunk stores it."""
    data = asdict(item)
    data["dep_hash"] = dep_hash
    return data


def item_from(data: dict[str, Any]) -> Item:
    fields = {key: value for key, value in data.items() if key != "dep_hash"}
    for key in ("references", "reference_ids", "reference_captions"):
        fields[key] = tuple(fields.get(key) or ())
    return Item(**fields)


def documents_hash(documents: Sequence[Sequence[str]]) -> str:
    """What CIDEr-D's idf depends on: the study's idf documents."""
    return content_hash([list(document) for document in documents])


def queue_for(family: str) -> str:
    """The queue of a family's chunks: ``SCORING_QUEUES``, else the default queue."""
    return settings.SCORING_QUEUES.get(family) or settings.CELERY_TASK_DEFAULT_QUEUE


def _chunk_size(family: str) -> int:
    sizes = settings.SCORING_STUDY_CHUNK_ITEMS
    return max(1, int(sizes.get(family, sizes.get("default", 200))))


def split_by_clip(items: Sequence[Any], size: int) -> list[list[Any]]:
    """Consecutive pieces of at most ``size`` items, whole clips together where they fit."""
    by_clip: dict[Any, list[Any]] = {}
    for item in items:
        by_clip.setdefault(item.clip_id, []).append(item)
    pieces: list[list[Any]] = []
    current: list[Any] = []
    for clip_items in by_clip.values():
        if current and len(current) + len(clip_items) > size:
            pieces.append(current)
            current = []
        for item in clip_items:
            if len(current) >= size:
                pieces.append(current)
                current = []
            current.append(item)
    if current:
        pieces.append(current)
    return pieces


# --------------------------------------------------------------------------- planning


def _stored_hashes(job: ScoreJob, unit: Any, label: str, version: str) -> dict[tuple[str, str], str]:
    """``(item key, metric) -> dep_hash`` of the stored results of the unit's items."""
    rows = ScoreResult.objects.filter(
        study=job.study,
        metric__in=unit.metrics,
        judge_or_backend=label,
        metric_version=version,
        subject__in={item.subject for item in unit.items},
    )
    if job.clip_id is not None:
        rows = rows.filter(caption__clip_id=job.clip_id)
    return {
        (key, metric): dep_hash
        for key, metric, dep_hash in rows.values_list("item_key", "metric", "dep_hash")
    }


def _claimed(job_id: int, token: str):
    return ScoreJob.objects.filter(pk=job_id, run_token=token, status=Status.RUNNING)


def study_job_run(
    *, job_id: int, task_id: str = "", on_progress: Callable[[Any], None] | None = None
) -> str:
    """Plan a study job into chunks and send them (or, when planned already, send again the
    chunks that did not finish: a redelivery or a recovery). Returns ``ran`` (planned and sent), ``resent``,
    ``finished``, ``busy`` or ``missing``. With ``on_progress`` (``manage.py score`` without a
    broker) the chunks run here, one after the other, each reported when it is stored.

    Only planning claims the job, so only a run that died planning can count against it: its
    progress is the job's ``progress_done``, every item of each chunk stored
    (:func:`scoring.services.claim_counts`), and a job whose chunks keep finishing is sent again
    however often its workers die. Planning renews the heartbeat at each unit, so a long one is
    not taken for dead (and stops, ``busy``, when another run took the job over)."""
    now = timezone.now()
    stale = now - timedelta(seconds=settings.SCORING_JOB_LEASE_SECONDS)
    job = ScoreJob.objects.filter(pk=job_id).first()
    if job is None:
        return "missing"
    if job.finished:
        return "finished"
    if job.chunks_total:
        ScoreJob.objects.filter(pk=job_id, status=Status.RUNNING).update(heartbeat_at=now)
        return "resent" if send_chunks(job, only_stalled=True) else "busy"
    token = uuid.uuid4().hex
    claimable = Q(status=Status.QUEUED) | Q(status=Status.RUNNING, heartbeat_at__lt=stale)
    if task_id:
        claimable |= Q(status=Status.RUNNING, task_id=task_id)
    # The claim keeps its message's id (see scoring.services.score_job_run).
    claimed = ScoreJob.objects.filter(claimable, pk=job_id, chunks_total=0).update(
        status=Status.RUNNING, run_token=token, **claim_counts(),
        **({"task_id": task_id} if task_id else {}),
        started_at=now, heartbeat_at=now, finished_at=None, progress_done=0, errors={},
    )
    if claimed != 1:
        return "busy"
    job = ScoreJob.objects.select_related("study").get(pk=job_id)
    failures: dict[str, dict[str, list[str]]] = {}
    failed_items = 0
    chunks: list[ScoreChunk] = []
    idf: list[list[str]] | None = None
    for unit in plan(job):
        if not _claimed(job_id, token).update(heartbeat_at=timezone.now()):
            return "busy"
        try:
            label = families.judge_or_backend(unit.family, unit.judge)
            version = families.metric_version(unit.metrics[0], job.splitter, job.study.caption_language)
        except Exception as error:  # noqa: BLE001 - one family failing must not stop the others
            from scoring.services import _describe

            for key in unit.error_keys():
                failures.setdefault(key, {}).setdefault(_describe(error), []).append(unit.group)
            failed_items += len(unit.items)
            continue
        extra = ""
        if unit.corpus:
            if idf is None:
                idf = idf_documents(job.study)
            extra = documents_hash(idf)
        stored = _stored_hashes(job, unit, label, version)
        stale_items = []
        for item in unit.items:
            dep = dependency_hash(item, label, version, extra)
            if any(stored.get((item.key, metric)) != dep for metric in unit.metrics):
                stale_items.append((item, dep))
        hashes = {item.key: dep for item, dep in stale_items}
        for piece in split_by_clip([item for item, _ in stale_items], _chunk_size(unit.family)):
            chunks.append(ScoreChunk(
                job=job, index=len(chunks), family=unit.family, judge=unit.judge,
                group=unit.group, metrics=list(unit.metrics), label=label, version=version,
                queue=queue_for(unit.family), item_count=len(piece),
                items=[item_payload(item, hashes[item.key]) for item in piece],
                task_id=f"{job.task_id}-{len(chunks)}",
            ))
    # The same message for several groups of items is said once ("overview, windows: ...").
    errors = {
        key: "; ".join(f"{', '.join(groups)}: {text}" for text, groups in said.items())
        for key, said in failures.items()
    }
    with transaction.atomic():
        ScoreChunk.objects.bulk_create(chunks, batch_size=200)
        if not _claimed(job_id, token).update(
            chunks_total=len(chunks),
            progress_total=failed_items + sum(chunk.item_count for chunk in chunks),
            progress_done=failed_items,
            errors=errors,
            heartbeat_at=timezone.now(),
        ):
            transaction.set_rollback(True)
            return "busy"
    if not chunks:
        status = Status.DONE if not errors else Status.FAILED
        _claimed(job_id, token).update(status=status, finished_at=timezone.now())
        return "ran"
    if on_progress is not None:
        _run_here(job, on_progress)
    else:
        send_chunks(job)
    return "ran"


def _run_here(job: ScoreJob, on_progress: Callable[[Any], None]) -> None:
    """Run every chunk of the job in this process, in order, with the retries a worker gives."""
    from scoring.services import Progress

    for chunk in ScoreChunk.objects.filter(job=job).order_by("index").only(
        "pk", "family", "judge", "group"
    ):
        for attempt in range(settings.SCORING_CHUNK_RETRIES + 1):
            try:
                score_chunk_run(chunk_id=chunk.pk, task_id=f"{job.task_id}-{chunk.index}")
                break
            except ChunkFailed as error:
                if attempt == settings.SCORING_CHUNK_RETRIES:
                    score_chunk_fail(chunk_id=chunk.pk, error=str(error))
        job.refresh_from_db(fields=["progress_done", "progress_total"])
        judge = f" ({chunk.judge})" if chunk.judge else ""
        on_progress(Progress(job.progress_done, job.progress_total,
                             f"{chunk.family}{judge}, {chunk.group}"))


def send_chunks(job: ScoreJob, *, only_stalled: bool = False) -> int:
    """Send the job's unfinished chunks to their queues; with ``only_stalled``, the queued ones
    and those running with a stale heartbeat, each only when the broker holds no message of it
    (:func:`annotation.jobs.message_lost`: a chunk waiting its turn gets no second message).
    Returns how many were sent."""
    chunks = ScoreChunk.objects.filter(job=job, status__in=[Chunk.QUEUED, Chunk.RUNNING])
    look = None
    if only_stalled:
        stale = timezone.now() - timedelta(seconds=settings.SCORING_JOB_LEASE_SECONDS)
        chunks = chunks.filter(Q(status=Chunk.QUEUED) | Q(heartbeat_at__lt=stale))
        look = broker_look()
    sent = 0
    for chunk_id, chunk_task_id, queue, status in chunks.order_by("index").values_list(
        "pk", "task_id", "queue", "status"
    ):
        if only_stalled and not message_lost(look, CHUNK_TASK, [chunk_id], running=status == Chunk.RUNNING,
                                             lease_seconds=settings.SCORING_JOB_LEASE_SECONDS):
            continue
        try:
            # A broker that does not answer: the chunk stays queued, kept to be sent later.
            job_send_or_keep(CHUNK_TASK, args=[chunk_id], task_id=chunk_task_id, queue=queue or None)
        except Exception as error:  # noqa: BLE001 - recorded on the chunk, the job goes on
            logger.exception("scoring chunk %s could not be sent", chunk_id)
            from scoring.services import _describe

            score_chunk_fail(chunk_id=chunk_id, error=f"could not be sent: {_describe(error)}")
        sent += 1
    return sent


# --------------------------------------------------------------------------- running a chunk


class ChunkFailed(Exception):
    """A chunk's family raised: the task tries it again, then records it failed."""


def _worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def score_chunk_run(*, chunk_id: int, task_id: str = "") -> str:
    """Claim a chunk, score it, and commit its rows with the job's counters. Returns ``ran``,
    ``finished`` (nothing to do), ``busy`` (another run holds it), ``cancelled`` or
    ``superseded``. Raises :class:`ChunkFailed` when the family raised (the task retries);
    database errors propagate (the task retries them too)."""
    from scoring.services import score_items

    token = uuid.uuid4().hex
    now = timezone.now()
    stale = now - timedelta(seconds=settings.SCORING_JOB_LEASE_SECONDS)
    claimable = Q(status=Chunk.QUEUED) | Q(status=Chunk.RUNNING, heartbeat_at__lt=stale)
    if task_id:
        claimable |= Q(status=Chunk.RUNNING, task_id=task_id)
    claimed = ScoreChunk.objects.filter(claimable, pk=chunk_id, job__status=Status.RUNNING).update(
        status=Chunk.RUNNING, run_token=token, attempts=F("attempts") + 1, started_at=now,
        heartbeat_at=now, worker=_worker_name(),
    )
    if claimed != 1:
        chunk = ScoreChunk.objects.filter(pk=chunk_id).select_related("job").first()
        if chunk is None:
            return "missing"
        if chunk.status in (Chunk.DONE, Chunk.FAILED):
            return "finished"
        if chunk.job.status == Status.CANCELLED or chunk.status == Chunk.CANCELLED:
            return "cancelled"
        return "busy"
    chunk = ScoreChunk.objects.select_related("job__study").get(pk=chunk_id)
    job = chunk.job
    items = [item_from(data) for data in chunk.items]
    hashes = {data["key"]: data["dep_hash"] for data in chunk.items}
    unit = Unit(chunk.family, list(chunk.metrics), chunk.judge, chunk.group, items)
    cpu = time.process_time()
    try:
        idf = _idf_documents(job) if unit.corpus else None
        rows, failed = score_items(job, unit, items, chunk.label, chunk.version, idf)
    except Exception as error:
        from scoring.services import DATABASE_ERRORS, _describe

        if isinstance(error, DATABASE_ERRORS):
            raise
        raise ChunkFailed(_describe(error)) from error
    for row in rows:
        row.dep_hash = hashes[row.item_key]
    cpu = time.process_time() - cpu
    error = ""
    if failed:
        key, message = next(iter(failed.items()))
        error = f"{len(failed)} of {len(items)} item(s) failed; {key}: {message}"
    from scoring.services import _upsert

    with transaction.atomic():
        if not ScoreChunk.objects.filter(pk=chunk_id, run_token=token, status=Chunk.RUNNING).update(
            status=Chunk.DONE, stored=len(rows), error=error, cpu_seconds=cpu,
            finished_at=timezone.now(),
        ):
            return "superseded"
        rows = rows_not_erased(job, rows)
        _upsert(rows)
        _count(job.pk, chunk, failed=False, error=error)
    return "ran"


def _idf_documents(job: ScoreJob) -> list[list[str]]:
    """The study's idf documents (one query), as the planning saw them."""
    return idf_documents(job.study)


def score_chunk_fail(*, chunk_id: int, error: str) -> None:
    """Record a chunk failed for good (its retries spent): its reason goes into the job's
    errors under each of its metrics, naming the chunk; the job finishes if it was the last."""
    from scoring.services import MAX_ERROR_CHARS

    with transaction.atomic():
        chunk = ScoreChunk.objects.select_for_update().filter(pk=chunk_id).first()
        if chunk is None or chunk.status in (Chunk.DONE, Chunk.FAILED, Chunk.CANCELLED):
            return
        chunk.status = Chunk.FAILED
        chunk.error = error[:MAX_ERROR_CHARS]
        chunk.finished_at = timezone.now()
        chunk.save(update_fields=["status", "error", "finished_at"])
        _count(chunk.job_id, chunk, failed=True, error=chunk.error)


def _error_keys(chunk: ScoreChunk) -> list[str]:
    if chunk.family in families.JUDGED_FAMILIES:
        return [f"{name}@{chunk.judge}" for name in chunk.metrics]
    return list(chunk.metrics)


def _count(job_id: int, chunk: ScoreChunk, *, failed: bool, error: str) -> None:
    """In the chunk's transaction: count it on the job (under the job row's lock) and finish
    the job when it was the last chunk."""
    job = ScoreJob.objects.select_for_update().get(pk=job_id)
    now = timezone.now()
    job.chunks_done += 0 if failed else 1
    job.chunks_failed += 1 if failed else 0
    job.progress_done = min(job.progress_total, job.progress_done + chunk.item_count)
    job.heartbeat_at = now
    if error:
        for key in _error_keys(chunk):
            said = job.errors.get(key)
            entry = f"{chunk.title}: {error}"
            job.errors[key] = f"{said}; {entry}" if said else entry
    fields = ["chunks_done", "chunks_failed", "progress_done", "heartbeat_at", "errors"]
    if job.status == Status.RUNNING and job.chunks_done + job.chunks_failed >= job.chunks_total:
        if not job.errors:
            job.status = Status.DONE
        else:
            stored = ScoreChunk.objects.filter(job_id=job_id, stored__gt=0).exists()
            job.status = Status.PARTIAL if stored else Status.FAILED
        job.progress_done = job.progress_total
        job.finished_at = now
        fields += ["status", "finished_at"]
    job.save(update_fields=fields)


def score_job_cancel(*, job_id: int) -> bool:
    """Cancel an unfinished job: the chunks not yet started are not run (those running finish
    and store their rows). Returns whether the job was cancelled."""
    with transaction.atomic():
        job = ScoreJob.objects.select_for_update().select_related("study").filter(pk=job_id).first()
        if job is None:
            return False
        study_require(job.study, Write.SCORING)
        if job.finished:
            return False
        job.status = Status.CANCELLED
        job.finished_at = timezone.now()
        job.save(update_fields=["status", "finished_at"])
        ScoreChunk.objects.filter(job_id=job_id, status=Chunk.QUEUED).update(
            status=Chunk.CANCELLED, finished_at=job.finished_at
        )
    return True


def chunk_progress(job: ScoreJob) -> dict[str, Any]:
    """Chunks and items of a study job: done, failed, pending, per family too."""
    rows = ScoreChunk.objects.filter(job=job).values_list("family", "status", "item_count")
    families_seen: dict[str, dict[str, int]] = {}
    for family, status, count in rows:
        entry = families_seen.setdefault(family, {"chunks": 0, "items": 0, "done": 0})
        entry["chunks"] += 1
        entry["items"] += count
        entry["done"] += 1 if status in (Chunk.DONE, Chunk.FAILED) else 0
    return {
        "chunks_total": job.chunks_total,
        "chunks_done": job.chunks_done,
        "chunks_failed": job.chunks_failed,
        "families": families_seen,
    }
