"""Caption imports as background jobs: a large file imported from the study page without a
request waiting for it, its progress visible while it runs.

**The job.** :func:`caption_import_job_create` keeps the uploaded bytes in the media storage
(``MEDIA_ROOT``, which every worker shares, as it shares the clips) and sends the job once its row
is committed. The run imports the file exactly as the synchronous import does
(:func:`~annotation.services.captions.captions_import_jsonl`,
:func:`~annotation.services.captions.captions_import_clip_cc`: validated whole, stored
all-or-nothing) and ends ``done`` with the report, ``refused`` with every error (nothing stored),
or ``failed`` saying why (nothing stored). The uploaded file is removed when the job ends.

**Progress lives in the cache.** The import stores every caption in one transaction, so nothing
it writes to the database can be seen before it commits. The run writes its phase (``waiting``
for the study's earlier import, ``validating`` the file, ``storing``) and, after each stored
batch, ``stored`` of ``total`` to Django's cache (Redis with ``CACHE_URL``; otherwise files under
``var/cache``, which the demo's web server and worker share), where the job's API answer reads it.
Writing progress never fails an import: a cache that cannot be reached only hides the counts.

**One import of a study at a time.** A run locks its study's row (``FOR NO KEY UPDATE``: rows
that merely refer to the study are not held up) for the length of its transaction, so two
imports started at once run one after the other: the second waits, then validates against what
the first stored (a caption both files hold is refused as a duplicate). The job's final state is
written in the import's own transaction: the captions and ``done`` commit together.

**Runs are safe to repeat.** A run claims its job with a conditional update (queued; or running
under the same Celery task id, i.e. a retry or a redelivery after its worker died) and stores a
fresh ``run_token``; the import commits only if the token is still its own. A running import
holds its job's row locked, so :func:`caption_import_jobs_recover` (worker start,
``manage.py recover_jobs``, the job API) sends again, or fails after ``JOB_MAX_ATTEMPTS``, only
the jobs whose process died.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.core.files import File
from django.core.files.storage import default_storage
from django.db import InterfaceError, OperationalError, transaction
from django.db.models import F, Q
from django.utils import timezone

from annotation.errors import ImportRefused, ServiceError
from annotation.jobs import broker_look, job_send_or_keep, message_lost
from annotation.media.storage import media_save
from annotation.models import CaptionImportJob, Study
from annotation.services.captions import (
    CaptionImportReport,
    captions_import_clip_cc,
    captions_import_jsonl,
)
from annotation.services.study_state import Write, study_require

logger = logging.getLogger(__name__)

State = CaptionImportJob.State
Format = CaptionImportJob.Format
TASK = "annotation.tasks.run_caption_import"
#: The run's phases while it is running, as the cache holds them.
WAITING, VALIDATING, STORING = "waiting", "validating", "storing"
#: Errors that abort a run so that the task tries again (they are not the file's fault).
DATABASE_ERRORS = (OperationalError, InterfaceError)
MAX_ERROR_CHARS = 1000
PROGRESS_SECONDS = 24 * 3600  # a progress entry outlives any import; the end removes it

Progress = Callable[[dict[str, Any]], None]


class _Superseded(Exception):
    """Another run took the job over: this one stores nothing."""


# --------------------------------------------------------------------------- progress


def _progress_key(job_id: int) -> str:
    return f"caption-import:{job_id}:progress"


def caption_import_progress_write(*, job_id: int, phase: str, stored: int = 0, total: int = 0) -> None:
    """Say where a running import is; never raises (progress must not fail an import)."""
    try:
        cache.set(_progress_key(job_id), {"phase": phase, "stored": stored, "total": total},
                  timeout=PROGRESS_SECONDS)
    except Exception:  # noqa: BLE001 - a cache outage hides the counts, the import goes on
        logger.warning("caption import %s: could not write its progress", job_id, exc_info=True)


def caption_import_progress(*, job_id: int) -> dict[str, Any] | None:
    """The running import's ``{"phase", "stored", "total"}`` from the cache, or None."""
    try:
        return cache.get(_progress_key(job_id))
    except Exception:  # noqa: BLE001 - as above: no counts, but the job still answers
        logger.warning("caption import %s: could not read its progress", job_id, exc_info=True)
        return None


# --------------------------------------------------------------------------- creating jobs


def caption_import_job_create(
    *,
    study: Study,
    upload: File,
    file_name: str,
    format: str = Format.JSONL,
    model: str = "",
    keep_invalid: bool = False,
    requested_by=None,
    enqueue: bool = True,
) -> CaptionImportJob:
    """Keep the uploaded file and create its import job; once committed, send it to a worker.

    ``format`` is ``jsonl`` or ``clip-cc``; a clip-cc file's model defaults to the file's name
    without its extension, as in the synchronous import. Raises ServiceError for an unknown
    format or an empty file. The same file posted again by the same person with the same options
    returns the first job while it is unfinished and younger than ``JOB_REPEAT_SECONDS`` (a
    repeated click), or once it is done (a retry of a request whose answer was lost, however
    late: a second job could only be refused as "already imported").
    """
    study_require(study, Write.CONTENT)
    if format not in Format.values:
        raise ServiceError(f"Unknown caption format {format!r}; use one of {', '.join(Format.values)}.")
    if not upload.size:
        raise ServiceError(f"{file_name}: the file is empty.")
    file_name = Path(file_name).name[:255] or "captions"
    if format == Format.CLIP_CC:
        model = model.strip() or Path(file_name).stem
    suffix = ".jsonl" if format == Format.JSONL else ".json"
    if requested_by is not None:
        with transaction.atomic():
            # The person's row held: two clicks at once agree on one job.
            get_user_model().objects.select_for_update().filter(pk=requested_by.pk).first()
            repeated = _repeated_job(study=study, upload=upload, format=format, model=model,
                                     keep_invalid=keep_invalid, requested_by=requested_by)
            if repeated is not None:
                return repeated
            return _job_create(study=study, upload=upload, file_name=file_name, format=format,
                               model=model, keep_invalid=keep_invalid, requested_by=requested_by,
                               enqueue=enqueue, suffix=suffix)
    return _job_create(study=study, upload=upload, file_name=file_name, format=format, model=model,
                       keep_invalid=keep_invalid, requested_by=requested_by, enqueue=enqueue,
                       suffix=suffix)


def _file_digest(handle) -> str:
    digest = hashlib.sha256()
    for chunk in iter(lambda: handle.read(1 << 20), b""):
        digest.update(chunk)
    return digest.hexdigest()


def _repeated_job(*, study: Study, upload: File, format: str, model: str, keep_invalid: bool,
                  requested_by) -> CaptionImportJob | None:
    """The same person's job of the same bytes and options that this request repeats: one
    unfinished and started within ``JOB_REPEAT_SECONDS`` (a repeated click), or one done (the
    retry of a request whose answer was lost, the web process killed mid-request after the job
    was stored). A refused or failed job is not one: the person may be trying again after
    fixing what stopped it."""
    recent = timezone.now() - timedelta(seconds=settings.JOB_REPEAT_SECONDS)
    return CaptionImportJob.objects.filter(
        Q(state__in=[State.QUEUED, State.RUNNING], created_at__gte=recent) | Q(state=State.DONE),
        study=study, requested_by=requested_by, format=format,
        model=model if format == Format.CLIP_CC else "", keep_invalid=keep_invalid,
        sha256=_upload_digest(upload),
    ).first()


def _upload_digest(upload: File) -> str:
    upload.seek(0)
    try:
        return _file_digest(upload)
    finally:
        upload.seek(0)


def _job_create(*, study: Study, upload: File, file_name: str, format: str, model: str,
                keep_invalid: bool, requested_by, enqueue: bool, suffix: str) -> CaptionImportJob:
    digest = _upload_digest(upload)
    stored_name = media_save(
        f"imports/captions/{study.slug}/{uuid.uuid4().hex}{suffix}", upload
    )
    try:
        with transaction.atomic():
            job = CaptionImportJob.objects.create(
                study=study,
                requested_by=requested_by,
                file_name=file_name,
                format=format,
                model=model if format == Format.CLIP_CC else "",
                keep_invalid=keep_invalid,
                upload=stored_name,
                sha256=digest,
                task_id=uuid.uuid4().hex,
            )
            if enqueue:
                transaction.on_commit(lambda: caption_import_job_send(job_id=job.pk))
    except BaseException:
        default_storage.delete(stored_name)
        raise
    return job


def caption_import_job_send(*, job_id: int) -> None:
    """Send a job to the workers (or the web process's job threads). Never raises: it runs
    after the commit of the request that created the job; the job records why it could not.
    When the broker does not answer, the job stays queued, kept to be sent once it answers."""
    job = CaptionImportJob.objects.get(pk=job_id)
    try:
        job_send_or_keep(TASK, args=[job.pk], task_id=job.task_id)
    except Exception as error:  # noqa: BLE001 - recorded on the job, see the docstring
        logger.exception("caption import %s could not be run", job_id)
        caption_import_job_fail(job_id=job_id, error=f"could not run the job: {_describe(error)}")


# --------------------------------------------------------------------------- running jobs


def caption_import_job_run(*, job_id: int, task_id: str = "", on_progress: Progress | None = None) -> str:
    """Claim the job and import its file. Returns what happened: ``done``, ``refused``,
    ``failed``; ``finished`` (it already was); ``busy`` (another run holds it); ``missing``;
    ``superseded`` (another run took it over). Database errors propagate (the task retries).

    ``on_progress`` is called with each progress entry after it is written (tests use it).
    """
    token = uuid.uuid4().hex
    claimable = Q(state=State.QUEUED)
    if task_id:
        claimable |= Q(state=State.RUNNING, task_id=task_id)
    claimed = CaptionImportJob.objects.filter(claimable, pk=job_id).update(
        state=State.RUNNING,
        run_token=token,
        attempts=F("attempts") + 1,
        started_at=timezone.now(),
        stored=0,
        total=0,
    )
    if claimed != 1:
        job = CaptionImportJob.objects.filter(pk=job_id).first()
        if job is None:
            return "missing"
        return "finished" if job.finished else "busy"
    job = CaptionImportJob.objects.select_related("study").get(pk=job_id)

    def progress(phase: str, stored: int = 0, total: int = 0) -> None:
        caption_import_progress_write(job_id=job_id, phase=phase, stored=stored, total=total)
        if on_progress is not None:
            on_progress({"phase": phase, "stored": stored, "total": total})

    progress(WAITING)
    try:
        outcome = _import(job, token, progress)
    except _Superseded:
        logger.warning("caption import %s was taken over by another run", job_id)
        return "superseded"
    except DATABASE_ERRORS:
        raise
    except Exception as error:  # noqa: BLE001 - recorded on the job, which then ends failed
        logger.exception("caption import %s failed", job_id)
        if not _finish(job_id, token, State.FAILED, errors=[_describe(error)]):
            return "superseded"
        outcome = State.FAILED
    _job_end(job)
    return outcome


def _import(job: CaptionImportJob, token: str, progress: Callable[..., None]) -> str:
    """The import and the job's final state, in one transaction; raises _Superseded (and rolls
    everything back) when the job is no longer this run's."""
    with transaction.atomic():
        # A running import holds its job's row: recovery leaves it alone, a redelivered task
        # waits for it (then finds the job finished).
        if not CaptionImportJob.objects.select_for_update().filter(
            pk=job.pk, state=State.RUNNING, run_token=token
        ).exists():
            raise _Superseded
        # One import of a study at a time (see the module's docstring).
        Study.objects.select_for_update(no_key=True).get(pk=job.study_id)
        progress(VALIDATING)
        data = _uploaded_bytes(job)

        def stored(done: int, total: int) -> None:
            progress(STORING, done, total)

        try:
            with transaction.atomic():
                report = _captions_import(job, data, stored)
        except ImportRefused as refusal:
            if not _finish(job.pk, token, State.REFUSED, errors=refusal.errors):
                raise _Superseded from None
            return State.REFUSED
        summary = {
            "stored": report.stored,
            "kept_invalid": report.kept_invalid,
            "models_created": report.models_created,
            "errors": report.errors,
        }
        if not _finish(job.pk, token, State.DONE, report=summary, stored=report.stored,
                       total=report.stored):
            raise _Superseded
    return State.DONE


def _uploaded_bytes(job: CaptionImportJob) -> bytes:
    try:
        with default_storage.open(job.upload.name, "rb") as handle:
            return handle.read()
    except OSError as error:
        raise ServiceError(
            f"the uploaded file {job.file_name} is no longer in the media storage "
            f"({job.upload.name}: {error.strerror or type(error).__name__}); import it again"
        ) from error


def _captions_import(
    job: CaptionImportJob, data: bytes, progress: Callable[[int, int], None]
) -> CaptionImportReport:
    if job.format == Format.CLIP_CC:
        return captions_import_clip_cc(study=job.study, data=data, model=job.model,
                                       keep_invalid=job.keep_invalid, progress=progress)
    return captions_import_jsonl(study=job.study, data=data, keep_invalid=job.keep_invalid,
                                 progress=progress)


def _finish(job_id: int, token: str, state: str, **fields: Any) -> bool:
    """End this run's job in ``state``; False when the job is no longer this run's."""
    return bool(
        CaptionImportJob.objects.filter(pk=job_id, state=State.RUNNING, run_token=token).update(
            state=state, finished_at=timezone.now(), **fields
        )
    )


def _job_end(job: CaptionImportJob) -> None:
    """A finished job's leftovers: its uploaded file and its progress entry."""
    if job.upload.name:
        try:
            default_storage.delete(job.upload.name)
        except OSError:
            logger.warning("caption import %s: could not remove %s", job.pk, job.upload.name)
        CaptionImportJob.objects.filter(pk=job.pk).update(upload="")
    try:
        cache.delete(_progress_key(job.pk))
    except Exception:  # noqa: BLE001 - the entry expires on its own
        logger.warning("caption import %s: could not remove its progress", job.pk)


def _describe(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    return text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS] + "..."


def caption_import_job_fail(*, job_id: int, error: str) -> None:
    """Mark an unfinished job failed with ``error`` (a task that gave up, a broker refusal)."""
    failed = CaptionImportJob.objects.filter(
        pk=job_id, state__in=[State.QUEUED, State.RUNNING]
    ).update(state=State.FAILED, errors=[error[:MAX_ERROR_CHARS]], finished_at=timezone.now())
    if failed:
        _job_end(CaptionImportJob.objects.get(pk=job_id))


def caption_import_jobs_at_closing(study: Study) -> None:
    """A study closing ends its imports still queued or running (annotation/apps.py hands this to
    annotation.services.lifecycle, which cannot import this module: it imports the studies
    service, which imports lifecycle)."""
    caption_import_jobs_end(study=study, why="the study closed before it finished")


def caption_import_jobs_end(*, study: Study, why: str) -> list[int]:
    """Fail the study's jobs still queued or running, saying `why` (the study closes: nothing
    they would store could be stored after). A run still going finds its job no longer its own
    and stores nothing."""
    ended = list(CaptionImportJob.objects.filter(study=study, state__in=[State.QUEUED, State.RUNNING])
                 .values_list("pk", flat=True))
    for job_id in ended:
        caption_import_job_fail(job_id=job_id, error=why)
    return ended


STALLED = (
    "the process running it stopped without finishing it ({count} times: a restart, or a worker "
    "killed for time or memory); nothing was stored. Import the file again, or look at the "
    "worker's log"
)


def caption_import_jobs_recover(*, study: Study | None = None, lost_before=None) -> dict[str, list[int]]:
    """Send again the import jobs whose process died, or fail them after too many tries.

    Stalled: running for longer than ``SCORING_JOB_LEASE_SECONDS`` with its row not held by a
    running import (PostgreSQL; SQLite has no row locks and goes by the time alone), or queued that
    long (a job thread's queue dies with its process; a broker may restart empty). A job claimed
    ``JOB_MAX_ATTEMPTS`` times fails, saying why. ``lost_before``: the broker restarted empty
    then, so a job queued before it is sent again now. Returns ``{"resumed": [ids], "failed": [ids]}``.
    """
    now = timezone.now()
    stale = now - timedelta(seconds=settings.SCORING_JOB_LEASE_SECONDS)
    stalled = Q(state=State.RUNNING, started_at__lt=stale)
    # Queued that long, its message may be lost (a job thread's queue dies with its process, a
    # broker may restart empty); sent again once a lease (started_at notes the sending).
    waited = max(stale, lost_before) if lost_before is not None else stale
    stalled |= Q(state=State.QUEUED, created_at__lt=waited) & (
        Q(started_at__isnull=True) | Q(started_at__lt=waited)
    )
    jobs = CaptionImportJob.objects.filter(stalled)
    if study is not None:
        jobs = jobs.filter(study=study)
    report: dict[str, list[int]] = {"resumed": [], "failed": []}
    if not jobs.exists():
        return report
    # What the broker holds: an import whose message waits its turn is not sent again.
    look = broker_look()
    with transaction.atomic():
        for job in jobs.select_for_update(skip_locked=True):
            if not message_lost(look, TASK, [job.pk], running=job.state == State.RUNNING,
                                lease_seconds=settings.SCORING_JOB_LEASE_SECONDS):
                continue
            if job.attempts >= settings.JOB_MAX_ATTEMPTS:
                job.state, job.errors = State.FAILED, [STALLED.format(count=job.attempts)]
                job.finished_at = now
                job.save(update_fields=["state", "errors", "finished_at"])
                transaction.on_commit(lambda job=job: _job_end(job))
                logger.warning("caption import %s stalled %s times: failed", job.pk, job.attempts)
                report["failed"].append(job.pk)
            else:
                # Renewed first, so that the next recovery does not send it again at once.
                job.started_at = now
                job.save(update_fields=["started_at"])
                transaction.on_commit(lambda pk=job.pk: caption_import_job_send(job_id=pk))
                logger.warning("caption import %s stalled: sending it again", job.pk)
                report["resumed"].append(job.pk)
    return report


# --------------------------------------------------------------------------- reading jobs


def caption_import_jobs_shown(*, study: Study) -> list[CaptionImportJob]:
    """What the study page shows: every unfinished import and the newest finished one, oldest
    first."""
    jobs = CaptionImportJob.objects.filter(study=study).select_related("requested_by")
    unfinished = list(jobs.filter(state__in=[State.QUEUED, State.RUNNING]))
    newest = jobs.exclude(state__in=[State.QUEUED, State.RUNNING]).first()
    shown = unfinished + ([newest] if newest else [])
    return sorted(shown, key=lambda job: (job.created_at, job.pk))


def caption_import_job_status(job: CaptionImportJob) -> dict[str, Any]:
    """The job as the API and the study page show it: its row, and while it runs, the phase and
    counts from the cache; ``detail`` says it in one sentence."""
    phase, stored, total = "", job.stored, job.total
    if job.state == State.RUNNING:
        now = caption_import_progress(job_id=job.pk) or {}
        phase = now.get("phase", WAITING)
        stored, total = int(now.get("stored", 0)), int(now.get("total", 0))
    return {
        "id": job.pk,
        "state": job.state,
        "phase": phase,
        "file_name": job.file_name,
        "format": job.format,
        "model": job.model,
        "keep_invalid": job.keep_invalid,
        "requested_by": job.requested_by.username if job.requested_by else None,
        "stored": stored,
        "total": total,
        "report": job.report or None,
        "errors": job.errors,
        "detail": _detail(job.state, phase, stored, total, job),
        "attempts": job.attempts,
        "created_at": job.created_at,
        "started_at": job.started_at,
        "finished_at": job.finished_at,
    }


def _detail(state: str, phase: str, stored: int, total: int, job: CaptionImportJob) -> str:
    if state == State.QUEUED:
        return "Queued."
    if state == State.RUNNING:
        if phase == STORING:
            return f"{stored:,} of {total:,} captions stored."
        if phase == VALIDATING:
            return "Checking every caption."
        return "Waiting for its turn: a study's imports run one at a time."
    if state == State.DONE:
        return f"Stored {job.stored:,} caption(s)."
    if state == State.REFUSED:
        return f"{len(job.errors)} error(s); nothing was stored."
    return "The import failed; nothing was stored."
