"""The web's profile exports as jobs: one folder per export, its state in a status file.

:func:`profile_job_create` starts an export of :func:`scoring.profiles.profile_export` that a
Celery task runs (:func:`profile_job_run`, from :mod:`scoring.profile_tasks`). A job needs no
table of its own: everything about it lives in its folder,
``MEDIA_ROOT/profiles/<study>/<job>/`` (:func:`job_dir`, the job id 32 hex digits).

**The folder's life cycle.**

1. *Created* whole or not at all: written as ``.<job>.new`` with its ``status.json`` (state
   ``queued``), then renamed into place; the task is sent once the transaction commits
   (:func:`_send`; a broker that does not answer keeps it to be sent later).
2. *Claimed* by the run that takes it: a ``claim`` file created exclusively holds its token
   (:func:`_claim`). Its state becomes ``running``; each progress step rewrites ``status.json``
   (always replaced whole, :func:`_write_json`), which also renews the run's lease.
3. *Written* into ``work-<token>/``, moved to ``files/`` only once complete, then zipped into
   ``profile-<study>-<job>.zip``; the state becomes ``done`` with the manifest and file list.
   An error in the study's own data makes it ``failed``, with the error.
4. *Postponed* when the server is in passing trouble (the database away, the disk full): put
   back to ``queued``, its claim released, for the task to try again (:func:`_postpone`).
5. *Recovered* when its process died: a job whose status has not changed for a lease is sent
   again, or failed after too many runs without progress (:func:`profile_jobs_recover`).
6. *Deleted* by a researcher (:func:`profile_job_delete`), or by retention once more than
   ``PROFILE_EXPORTS_KEPT`` exports have ended (:func:`profile_exports_prune`): a finished or
   failed export only, never one queued or running.

Downloads read only a ``done`` job's files (:func:`profile_job_file`).
"""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import shutil
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from annotation.errors import ServiceError
from annotation.jobs import TRANSIENT_ERRORS, BrokerLook, broker_look, job_send_or_keep, message_lost
from annotation.models import Study
from annotation.services.studies import study_audit
from annotation.services.study_state import Write, study_require
from scoring.profiles import MAIN_TABLE, ProfileError, export_files, export_steps, export_zip, profile_export

logger = logging.getLogger(__name__)


JOB_ID = re.compile(r"^[0-9a-f]{32}$")
QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
#: The states of an export that has ended: only these may be deleted.
ENDED = (DONE, FAILED)
EXPORT_TASK = "scoring.profile_tasks.export_profile"
MAX_RESAMPLES = 200_000


def jobs_root(study: Study) -> Path:
    """Return the folder of the study's profile jobs."""
    return Path(settings.MEDIA_ROOT) / "profiles" / study.slug


def job_dir(study: Study, job_id: str) -> Path:
    if not JOB_ID.match(job_id):
        raise ProfileError("No such profile job.")
    return jobs_root(study) / job_id


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Replace ``path`` atomically, so a reader never sees half a file; a write that fails (a
    full disk) leaves no temporary file behind."""
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    try:
        temporary.write_text(json.dumps(data, indent=1), encoding="utf-8")
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def profile_job_status(*, study: Study, job_id: str) -> dict[str, Any] | None:
    """Return the job's status (see :func:`profile_job_create`), or None for an unknown job."""
    if not JOB_ID.match(job_id):
        return None
    return _read_json(job_dir(study, job_id) / "status.json")


def profile_jobs(*, study: Study) -> list[dict[str, Any]]:
    """Return the study's profile jobs, newest first."""
    root = jobs_root(study)
    found = [_read_json(path / "status.json") for path in root.iterdir()
             if path.is_dir() and JOB_ID.match(path.name)] if root.is_dir() else []
    return sorted((s for s in found if s), key=lambda s: s["created_at"], reverse=True)


def profile_job_create(
    *,
    study: Study,
    requested_by: str = "",
    resamples: int = 20_000,
    adjusted_resamples: int = 4_000,
    seed: int = 0,
    paired_only: bool = False,
    final: bool = False,
) -> dict[str, Any]:
    """Start an export of the study's profile; return the new job's status. `final` marks the
    profile built when the study closed (annotation.services.lifecycle).

    The job runs :func:`profile_job_run` in a Celery task, sent once the current transaction
    commits. Its status: ``job``, ``study``, ``state`` (queued, running, done, failed),
    ``done``/``total`` steps and ``step`` (what it is doing), ``options``, ``requested_by``,
    times, ``error``; once done also ``manifest``, ``files`` (relative paths) and ``zip``.

    One job per click: the same export asked again by the same person while theirs is queued or
    running, within ``JOB_REPEAT_SECONDS``, returns that job. The job's folder appears whole (its
    status written under a temporary name first), or not at all.
    """
    study_require(study, Write.EXPORT)  # every state allows it: files, the study's rows unchanged
    for name, value, low in (("resamples", resamples, 1),
                             ("adjusted resamples", adjusted_resamples, 1), ("seed", seed, 0)):
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= (
                MAX_RESAMPLES if name != "seed" else 2**32 - 1):
            raise ProfileError(f"The number of {name} must be a whole number from {low} to "
                               f"{MAX_RESAMPLES if name != 'seed' else 2**32 - 1}, not {value!r}.")
    options = {"resamples": resamples, "adjusted_resamples": adjusted_resamples, "seed": seed,
               "paired_only": bool(paired_only)}
    with transaction.atomic():
        # The person's row held: two clicks at once agree on one job.
        if requested_by:
            get_user_model().objects.select_for_update().filter(username=requested_by).first()
        repeated = _repeated_job(study, requested_by=requested_by, options=options, final=final)
        if repeated is not None:
            return repeated
        return _job_folder_create(study, requested_by=requested_by, options=options, final=final)


def _repeated_job(study: Study, *, requested_by: str, options: Mapping[str, Any],
                  final: bool) -> dict[str, Any] | None:
    """The same person's unfinished job with the same options, started within
    ``JOB_REPEAT_SECONDS``: a repeated click."""
    recent = time.time() - settings.JOB_REPEAT_SECONDS
    for status in profile_jobs(study=study):
        if (status["state"] in (QUEUED, RUNNING) and status["requested_by"] == requested_by
                and status["options"] == options and bool(status.get("final")) == final
                and datetime.fromisoformat(status["created_at"]).timestamp() >= recent):
            return status
    return None


def _job_folder_create(study: Study, *, requested_by: str, options: Mapping[str, Any],
                       final: bool) -> dict[str, Any]:
    job_id = uuid.uuid4().hex
    root = jobs_root(study)
    root.mkdir(parents=True, exist_ok=True)
    folder = root / job_id
    temporary = root / f".{job_id}.new"
    status = {
        "job": job_id, "study": study.slug, "state": QUEUED, "done": 0, "total": export_steps(),
        "step": "waiting for a worker", "error": "", "requested_by": requested_by,
        "options": dict(options),
        "created_at": _now(), "updated_at": _now(), "started_at": None, "finished_at": None,
        "final": final,
    }
    try:
        temporary.mkdir()
        _write_json(temporary / "status.json", status)
        os.replace(temporary, folder)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
    study_id = study.pk
    transaction.on_commit(lambda: _send(study_id, job_id))
    return status


def _send(study_id: int, job_id: str) -> None:
    """Send the export to the workers; kept to be sent later when the broker does not answer
    (the job stays queued). Never raises: any other refusal is recorded on the job."""
    try:
        job_send_or_keep(EXPORT_TASK, args=[study_id, job_id], queue=settings.PROFILE_QUEUE or None)
    except Exception as error:  # noqa: BLE001 - recorded on the job, which then ends failed
        logger.exception("profile job %s could not be sent", job_id)
        study = Study.objects.get(pk=study_id)
        folder = job_dir(study, job_id)
        status = _read_json(folder / "status.json")
        if status is not None and status["state"] == QUEUED:
            status.update(state=FAILED, step="failed", finished_at=_now(), updated_at=_now(),
                          error=f"The export could not be started: {type(error).__name__}: {error}")
            _write_json(folder / "status.json", status)


def profile_jobs_recover(*, study: Study, lost_before: float | None = None) -> dict[str, list[str]]:
    """Send again the study's export jobs whose process died, or fail them after too many tries.

    A job is stalled when it is running or queued (a job thread's queue dies with its process, a
    broker may restart empty) and its status has not changed for ``PROFILE_JOB_LEASE_SECONDS``. It
    is sent again (the dead run's claim is removed, so the new run claims it) unless
    ``JOB_MAX_ATTEMPTS`` of its runs stopped without progress (:func:`_runs_without_progress`: a
    run killed by faults around it after getting further than every run before it does not
    count; an export that kills its worker on its own data does); then it is marked failed,
    saying why.
    ``lost_before`` (a time stamp): the broker restarted empty then, so a job queued and not
    touched since is sent again now. Returns ``{"resumed": [job ids], "failed": [job ids]}``.
    """
    report: dict[str, list[str]] = {"resumed": [], "failed": []}
    waiting = (RUNNING, QUEUED)
    look: BrokerLook | None = None
    looked = False
    for status in profile_jobs(study=study):
        updated = datetime.fromisoformat(status["updated_at"]).timestamp()
        lost = lost_before is not None and status["state"] == QUEUED and updated < lost_before
        if status["state"] not in waiting or (time.time() - updated < _lease_seconds() and not lost):
            continue
        if not looked:  # what the broker holds: an export waiting its turn is not sent again
            look, looked = broker_look(), True
        if not message_lost(look, EXPORT_TASK, [study.pk, status["job"]], running=status["state"] == RUNNING,
                            lease_seconds=_lease_seconds()):
            continue
        folder = job_dir(study, status["job"])
        strikes = _runs_without_progress(status)
        if strikes >= settings.JOB_MAX_ATTEMPTS:
            status.update(state=FAILED, step="failed", finished_at=_now(), updated_at=_now(),
                          error=f"The export stopped without finishing {strikes} times without "
                                "progress (a restart, or a worker killed for time or memory): "
                                "start it again, or look at the worker's log.")
            _write_json(folder / "status.json", status)
            report["failed"].append(status["job"])
        else:
            (folder / "claim").unlink(missing_ok=True)
            status.update(step="sent again: its process stopped", updated_at=_now())
            _write_json(folder / "status.json", status)
            _send(study.pk, status["job"])
            report["resumed"].append(status["job"])
    return report


def _run_advanced(status: Mapping[str, Any]) -> bool:
    """Whether the export's last run got further than every run before it: its steps ``done``
    passed ``done_seen``, the most steps a run before it reached. Each run starts the export
    afresh, so one that got no further than those before it did no new work."""
    return int(status.get("done", 0)) > int(status.get("done_seen", 0))


def _runs_without_progress(status: Mapping[str, Any]) -> int:
    """How many runs of a stalled export stopped without progress: its ``attempts`` less its
    ``runs_with_progress`` (counted by each claim, of the run before it) and less the dead run
    when it advanced (:func:`_run_advanced`)."""
    counted = int(status.get("attempts", 0)) - int(status.get("runs_with_progress", 0))
    return max(0, counted - (1 if _run_advanced(status) else 0))


class _TakenOver(Exception):
    """Another run claimed the job (this one was presumed dead); stop quietly."""


def _lease_seconds() -> int:
    return int(getattr(settings, "PROFILE_JOB_LEASE_SECONDS", 900))


def _claim(folder: Path, status: Mapping[str, Any]) -> str | None:
    """Claim the job for this run; return its token, or None when a live run holds it.

    The claim is a file created exclusively: of two runs that race, one creates it. A run that
    died leaves a claim without progress; after the lease it may be taken over.
    """
    token = uuid.uuid4().hex
    path = folder / "claim"
    try:
        descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        updated = datetime.fromisoformat(status["updated_at"]).timestamp()
        if time.time() - updated < _lease_seconds():
            return None
        _write_json(path, {"token": token})
        return token
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            json.dump({"token": token}, handle)
    except BaseException:
        path.unlink(missing_ok=True)  # an empty claim (a full disk) would hold the job for a lease
        raise
    return token


class ProfileJobPostponed(Exception):
    """The export stopped for a reason outside its data (the database did not answer, the disk
    is full): the job is queued again as it was, for its task to try again later."""


def _outside_trouble(error: BaseException) -> str | None:
    """Why ``error`` is the server's passing trouble rather than the job's own, or None."""
    if isinstance(error, TRANSIENT_ERRORS):
        return "the database did not answer"
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        return "the disk is full"
    return None


def _postpone(folder: Path, status: dict[str, Any], token: str, attempts: int, why: str) -> None:
    """Put a job this run claimed back in the queue, its attempt not counted, and release the
    claim so that the next run takes it. On a full disk its status may not be writable: the
    claim is released all the same (the status still says queued or running)."""
    claim = _read_json(folder / "claim") or {}
    if claim.get("token") != token:
        return  # taken over meanwhile: the other run owns the job
    try:
        # Its steps are seen, so that the next claim does not count it as a run with progress.
        seen = max(int(status.get("done", 0)), int(status.get("done_seen", 0)))
        status.update(state=QUEUED, step=f"waiting to run again: {why}", attempts=attempts,
                      done_seen=seen, updated_at=_now())
        _write_json(folder / "status.json", status)
    except OSError:
        logger.warning("profile job %s: could not write its status (%s)", folder.name, why)
    finally:
        (folder / "claim").unlink(missing_ok=True)


def profile_job_run(*, study_id: int, job_id: str) -> dict[str, Any] | None:
    """Run the export of a queued job; safe to call twice (a finished job is left as it is).

    Files are written into a fresh work folder and moved into ``files/`` only when complete, so
    a run that dies halfway leaves nothing half-written where downloads look. A job fails for
    good only for a reason in its own data: when the database does not answer or the disk is
    full, it is queued again as it was and :class:`ProfileJobPostponed` is raised (its task
    tries again later).
    """
    study = Study.objects.get(pk=study_id)
    folder = job_dir(study, job_id)
    status = _read_json(folder / "status.json")
    if status is None or status["state"] in (DONE, FAILED):
        return status
    try:
        token = _claim(folder, status)
    except OSError as error:
        why = _outside_trouble(error)
        if why is None:
            raise
        raise ProfileJobPostponed(f"profile job {job_id}: {why} ({error})") from error
    if token is None:
        return status
    attempts = status.get("attempts", 0)

    def update(**changes: Any) -> None:
        claim = _read_json(folder / "claim") or {}
        if claim.get("token") != token:
            raise _TakenOver
        status.update(changes, updated_at=_now())
        _write_json(folder / "status.json", status)

    work = folder / f"work-{token}"
    options = status["options"]
    try:
        # The run before this one is judged here (see _runs_without_progress).
        advanced = _run_advanced(status)
        update(state=RUNNING, started_at=_now(), step="starting", error="", attempts=attempts + 1,
               runs_with_progress=int(status.get("runs_with_progress", 0)) + (1 if advanced else 0),
               done_seen=max(int(status.get("done", 0)), int(status.get("done_seen", 0))))
        manifest = profile_export(
            study=study, out_dir=work, resamples=options["resamples"],
            adjusted_resamples=options["adjusted_resamples"], seed=options["seed"],
            paired_only=options["paired_only"],
            progress=lambda done, total, message: update(done=done, total=total, step=message),
        )
        update(step="zip of every file")
        files = folder / "files"
        if files.exists():
            shutil.rmtree(files)
        os.replace(work, files)
        zip_name = f"profile-{study.slug}-{job_id[:8]}.zip"
        export_zip(files, folder / zip_name, manifest)
        update(state=DONE, step="done", finished_at=_now(), manifest=manifest,
               files=export_files(manifest), zip=zip_name)
    except _TakenOver:
        shutil.rmtree(work, ignore_errors=True)
        return _read_json(folder / "status.json")
    except Exception as error:
        shutil.rmtree(work, ignore_errors=True)
        why = _outside_trouble(error)
        if why is not None:
            logger.warning("profile job %s of study %s put back in the queue: %s (%s)", job_id,
                           study.slug, why, error)
            _postpone(folder, status, token, attempts, why)
            raise ProfileJobPostponed(f"profile job {job_id}: {why} ({error})") from error
        # Why catch everything: the page must say the job failed instead of waiting forever.
        logger.exception("profile job %s of study %s failed", job_id, study.slug)
        message = str(error) if isinstance(error, ServiceError) else (
            f"{type(error).__name__}: {error}")
        try:
            update(state=FAILED, step="failed", finished_at=_now(), error=message)
        except _TakenOver:
            pass
    _exports_prune_quietly(study)
    return status


def profile_job_file(*, study: Study, job_id: str, name: str) -> Path | None:
    """Return the path of a finished job's file (a manifest file or the zip), or None."""
    status = profile_job_status(study=study, job_id=job_id)
    if not status or status.get("state") != DONE:
        return None
    folder = job_dir(study, job_id)
    if name == status.get("zip"):
        return folder / name
    if name in status.get("files", []):
        return folder / "files" / name
    return None


def main_table(*, study: Study, job_id: str) -> dict[str, Any] | None:
    """Return the per-model profile table (Table 10) of a finished job, as its JSON document."""
    return profile_table(study=study, job_id=job_id, name=MAIN_TABLE)


def profile_table(*, study: Study, job_id: str, name: str) -> dict[str, Any] | None:
    """Return one table of a finished job as its JSON document (None when there is none)."""
    path = profile_job_file(study=study, job_id=job_id, name=f"tables/{name}.json")
    return _read_json(path) if path else None


# --------------------------------------------------------------------------- deleting exports


class ProfileJobBusy(ProfileError):
    """The export is queued or running: it cannot be deleted until it ends."""


def _summary(status: Mapping[str, Any]) -> dict[str, Any]:
    """What the study's history keeps of a deleted export."""
    return {"export": status["job"], "state": status["state"], "requested_by": status.get("requested_by", ""),
            "created_at": status.get("created_at"), "final": bool(status.get("final"))}


@contextmanager
def _exports_hidden(study: Study, job_ids: Sequence[str]) -> Iterator[list[str]]:
    """Take the exports' folders out of the listing at once, in a transaction; yield the ids of
    those hidden (one already gone is left out).

    Each folder is renamed to a hidden name, so that a listing, a download or a second delete
    no longer finds it; its files are removed once the transaction commits. When the block
    raises, the folders are put back. Files a failed removal leaves behind keep their hidden
    name, which ``manage.py media_check --clean`` removes.
    """
    hidden: dict[str, Path] = {}
    try:
        with transaction.atomic():
            for job_id in job_ids:
                folder = job_dir(study, job_id)
                target = folder.with_name(f".{job_id}.deleted-{uuid.uuid4().hex}")
                try:
                    os.rename(folder, target)
                except FileNotFoundError:
                    continue  # deleted meanwhile (another delete, another export's retention)
                hidden[job_id] = target
            yield list(hidden)
            for target in hidden.values():
                transaction.on_commit(partial(shutil.rmtree, target, ignore_errors=True))
    except BaseException:
        for job_id, target in hidden.items():
            os.rename(target, job_dir(study, job_id))
        raise


def profile_job_delete(*, study: Study, job_id: str, actor: Any) -> dict[str, Any] | None:
    """Delete an export that has ended (done or failed): its folder and files go, and with them
    its entry in the listing; the study's history records who deleted which.

    Returns the status it had, or None when the study has no such export. A queued or running
    export is refused (:class:`ProfileJobBusy`): a worker is writing into its folder.
    """
    study_require(study, Write.EXPORT)  # files only, the study's rows unchanged: every state allows it
    status = profile_job_status(study=study, job_id=job_id)
    if status is None:
        return None
    if status["state"] not in ENDED:
        # An ended export never runs again (profile_job_run leaves it as it is): no race here.
        raise ProfileJobBusy(f"This export is still {status['state']}: it can be deleted once it has "
                             "finished or failed.")
    with _exports_hidden(study, [job_id]) as removed:
        if not removed:
            return None
        study_audit(study=study, actor=actor, action="profile_export_delete", before=_summary(status), after={})
    return status


def profile_exports_prune(*, study: Study, kept: int | None = None) -> list[str]:
    """Delete the study's oldest ended exports beyond the newest ``kept`` (by default
    ``PROFILE_EXPORTS_KEPT``; 0 keeps them all); return the ids deleted.

    Only a finished or failed export is counted and deleted, never one queued or running, and
    never the final profile made when the study closed (it records the study's end). Newest is
    by the time the export was asked for. The study's history records one event per pruning.
    """
    kept = settings.PROFILE_EXPORTS_KEPT if kept is None else kept
    if kept <= 0:
        return []
    ended = [s for s in profile_jobs(study=study) if s["state"] in ENDED and not s.get("final")]
    beyond = ended[kept:]
    if not beyond:
        return []
    with _exports_hidden(study, [s["job"] for s in beyond]) as removed:
        if removed:
            study_audit(study=study, actor=None, action="profile_export_prune", before={
                "exports": [_summary(s) for s in beyond if s["job"] in removed], "kept": kept}, after={})
    return removed


def _exports_prune_quietly(study: Study) -> None:
    """Retention after an export ended; its trouble is logged, never the export's failure."""
    try:
        removed = profile_exports_prune(study=study)
    except Exception:  # noqa: BLE001 - the export is done; pruning tries again after the next one
        logger.exception("old profile exports of study %s could not be deleted", study.slug)
        return
    if removed:
        logger.info("study %s: %d old profile export(s) deleted (PROFILE_EXPORTS_KEPT)", study.slug, len(removed))
