"""Scoring jobs: compare what the models wrote with the final verdicts and the references, and
store every number. Writes go through the functions here; tasks and commands only call them.

What a job compares (the subjects, Table 1's reference sets) and which metrics run on which
subjects is :mod:`scoring.comparisons`; this module creates, runs, recovers and ends the jobs.

**A study job fans out** into chunks that any number of workers score (:mod:`scoring.chunks`:
planning, dependency hashes, claiming, retries, cancelling); what follows is about verdict jobs,
which run in one task. **Runs are idempotent.** A result is keyed by (item, metric, judge or backend, metric version)
and written with an upsert, so running a job twice, or a second job over the same items, leaves
the same rows. A run first *claims* its job with a conditional update (queued; or running, but
claimed by the same Celery task, i.e. a retry or a redelivery after its worker died; or running
with a heartbeat older than ``SCORING_JOB_LEASE_SECONDS``), storing a fresh ``run_token``; every
later write checks that token, so a run that was taken over stops at its next step. Results are
committed chunk by chunk (``SCORING_CHUNK_SIZE`` items) together with the progress; a run that
takes over skips the items this job has already stored.

**Failures are isolated per family (and judge).** An error in one family (the LLM endpoint is
down, Java is missing) is recorded in ``job.errors`` under each of its metrics, and the others
go on: the job ends ``partial``. Only database errors abort the run: they are transient, and the
task retries the job with backoff.
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from statistics import fmean
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import InterfaceError, OperationalError, transaction
from django.db.models import Avg, Case, Count, F, IntegerField, Max, Min, Q, Value, When
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from annotation.errors import ServiceError
from annotation.jobs import broker_look, job_send_or_keep, message_lost
from annotation.models import Annotation, Study
from annotation.rules import workflow
from annotation.selectors.counted import counted_annotations
from annotation.services.study_state import Write, study_require
from scoring import families
from scoring.comparisons import Item, Unit, idf_documents, plan
from scoring.erasure import rows_not_erased
from scoring.metrics.registry import METRICS, Pair, ScoringOptions, metric_names
from scoring.metrics.sentences import DEFAULT_SPLITTER, SPLITTERS
from scoring.models import ScoreChunk, ScoreJob, ScoreResult

logger = logging.getLogger(__name__)

JOB_TASK = "scoring.tasks.run_score_job"

Status = ScoreJob.Status
#: Errors that abort a run so that the task retries it (they are not a metric's fault).
DATABASE_ERRORS = (OperationalError, InterfaceError)
MAX_ERROR_CHARS = 1000


# --------------------------------------------------------------------------- creating jobs


def score_job_create(
    *,
    study: Study,
    kind: str = ScoreJob.Kind.STUDY,
    annotation: Annotation | None = None,
    metrics: Sequence[str] | None = None,
    judges: Sequence[str] | None = None,
    splitter: str = DEFAULT_SPLITTER,
    requested_by=None,
    enqueue: bool = True,
    clip=None,
    delay_seconds: float | None = None,
) -> ScoreJob:
    """Create a scoring job and, once the transaction commits, send it to a worker.

    ``metrics`` defaults to the verdict or study defaults (:mod:`scoring.families`), ``judges``
    to ``SCORING_JUDGES`` (kept only when an embedding metric is asked for); ``splitter`` names
    the sentence splitter of the sentence-level embedding metrics (``punkt``, the benchmarks',
    or ``redline``) and is recorded in their metric version. Refuses unknown
    metrics, and corpus-relative metrics in a verdict job. Asking for llmfacts_f1 without its
    settings is allowed: the job records that metric as failed, the others run. ``clip`` limits
    a study job to one clip (live scores); ``delay_seconds`` sends it that much later. The same
    job asked again by the same person within ``JOB_REPEAT_SECONDS``, while unfinished, is that
    job (a repeated click).
    """
    study_require(study, Write.SCORING)
    if splitter not in SPLITTERS:
        raise ServiceError(
            f"Unknown sentence splitter {splitter!r}; choose from {', '.join(SPLITTERS)}.")
    if kind not in ScoreJob.Kind.values:
        raise ServiceError(f"Unknown job kind {kind!r}: use verdict or study.")
    if (kind == ScoreJob.Kind.VERDICT) != (annotation is not None):
        raise ServiceError("A verdict job scores one annotation; a study job scores the study.")
    if annotation is not None and annotation.caption.clip.study_id != study.pk:
        raise ServiceError("That annotation belongs to another study.")
    if clip is not None and (kind != ScoreJob.Kind.STUDY or clip.study_id != study.pk):
        raise ServiceError("Only a study job is limited to a clip, and only to one of its own.")
    if metrics:
        names = list(dict.fromkeys(metrics))
    elif kind == ScoreJob.Kind.VERDICT:
        names = families.verdict_default_metrics()
    else:
        names = families.study_default_metrics()
    unknown = [name for name in names if name not in METRICS]
    if unknown:
        raise ServiceError(
            f"Unknown metric(s) {', '.join(unknown)}; available: {', '.join(metric_names())}."
        )
    if not names:
        raise ServiceError("Choose at least one metric.")
    corpus = [name for name in names if families.family_of(name) in families.CORPUS_FAMILIES]
    if kind == ScoreJob.Kind.VERDICT and corpus:
        raise ServiceError(
            f"{', '.join(corpus)} are corpus-relative (CIDEr's idf comes from the whole corpus): "
            "score them with a study job."
        )
    judged = any(families.family_of(name) in families.JUDGED_FAMILIES for name in names)
    judge_list = list(dict.fromkeys(judges or families.default_judges())) if judged else []
    if judged and not judge_list:
        raise ServiceError("Embedding metrics need at least one judge.")
    with transaction.atomic():
        if requested_by is not None:
            # A repeated click (the same job asked by the same person moments ago, still
            # unfinished) is that job. The person's row held: two clicks at once agree.
            get_user_model().objects.select_for_update().filter(pk=requested_by.pk).first()
            repeated = ScoreJob.objects.filter(
                study=study, kind=kind, annotation=annotation, clip=clip, metrics=names,
                judges=judge_list, splitter=splitter, requested_by=requested_by,
                status__in=[Status.QUEUED, Status.RUNNING],
                created_at__gte=timezone.now() - timedelta(seconds=settings.JOB_REPEAT_SECONDS),
            ).order_by("-created_at").first()
            if repeated is not None:
                return repeated
        job = ScoreJob.objects.create(
            study=study,
            kind=kind,
            annotation=annotation,
            metrics=names,
            judges=judge_list,
            splitter=splitter,
            requested_by=requested_by,
            task_id=uuid.uuid4().hex,
            clip=clip,
        )
        if enqueue:
            transaction.on_commit(
                lambda: score_job_enqueue(job_id=job.pk, delay_seconds=delay_seconds)
            )
    return job


def score_job_enqueue(*, job_id: int, delay_seconds: float | None = None) -> None:
    """Send a job to the workers (or, without a broker, to the web process's job threads).

    Never raises: this runs after a commit (an approval, say) that must not look failed because
    scoring could not start; the job records why instead. When the broker does not answer, the
    job stays queued and is kept to be sent once it answers again (annotation.jobs).
    """
    job = ScoreJob.objects.get(pk=job_id)
    try:
        job_send_or_keep(JOB_TASK, args=[job.pk], task_id=job.task_id,
                         countdown=delay_seconds)
    except Exception as error:  # noqa: BLE001 - recorded on the job, see the docstring
        logger.exception("scoring job %s could not be run", job_id)
        score_job_fail(job_id=job_id, error=f"could not run the job: {_describe(error)}")


WITHDRAWN = "the approval was undone before scoring finished; none of its scores are kept"


def score_verdict_withdrawn(annotation_id: int) -> None:
    """The hook of an undone approval: stop the annotation's unfinished verdict jobs and discard
    every score computed for it (a job still running stores nothing more, see _Run._final_rows).
    Nothing happens when the annotation is approved again meanwhile."""
    with transaction.atomic():
        withdrawn = Annotation.objects.select_for_update().filter(pk=annotation_id).exclude(
            state=workflow.APPROVED)
        if not withdrawn.exists():
            return
        ScoreJob.objects.filter(
            kind=ScoreJob.Kind.VERDICT, annotation_id=annotation_id,
            status__in=[Status.QUEUED, Status.RUNNING],
        ).update(status=Status.FAILED, errors={"job": WITHDRAWN}, finished_at=timezone.now())
        ScoreResult.objects.filter(annotation_id=annotation_id).delete()


LIVE_STATUSES = [Status.DONE, Status.PARTIAL]


def score_clip_live(clip) -> ScoreJob | None:
    """Live scores: re-score what a new final verdict made stale on ``clip`` (its leave-out
    sets, its matched pairs, its verdict items) with the metrics, judges and splitter of the
    study's latest finished whole-study job, ``SCORING_LIVE_DELAY_SECONDS`` later, on the
    workers. Debounced: while a clip job of that clip is still queued, it will see this verdict
    too, and no other is made. Nothing when the study was never scored as a whole (nothing to
    keep up to date). Returns the job queued, if any."""
    if not settings.SCORING_LIVE_SCORES:
        return None
    study = clip.study
    latest = (
        ScoreJob.objects.filter(
            study=study, kind=ScoreJob.Kind.STUDY, clip__isnull=True, status__in=LIVE_STATUSES
        )
        .order_by("-finished_at", "-pk")
        .first()
    )
    if latest is None:
        return None
    with transaction.atomic():
        # The study row's lock makes two verdicts at once agree on one queued job.
        Study.objects.select_for_update().filter(pk=study.pk).first()
        if ScoreJob.objects.filter(clip=clip, status=Status.QUEUED).exists():
            return None
        return score_job_create(
            study=study, clip=clip, metrics=latest.metrics, judges=latest.judges or None,
            splitter=latest.splitter, delay_seconds=settings.SCORING_LIVE_DELAY_SECONDS,
        )


def score_job_fail(*, job_id: int, error: str) -> None:
    """Mark an unfinished job failed with ``error`` (a task that gave up, a broker refusal)."""
    job = ScoreJob.objects.filter(pk=job_id).first()
    if job is None or job.finished:
        return
    errors = {**job.errors, "job": error[:MAX_ERROR_CHARS]}
    ScoreJob.objects.filter(pk=job_id, status__in=[Status.QUEUED, Status.RUNNING]).update(
        status=Status.FAILED, errors=errors, finished_at=timezone.now()
    )


STUDY_CLOSED = "the study closed before it finished: a closed study's scores do not change"


def score_jobs_end(study: Study) -> list[int]:
    """Fail the study's jobs still queued or running (it is closing: what they would store is
    refused after); their chunks not yet started are not run. A run still going finds its job
    no longer running and stops."""
    ended = list(ScoreJob.objects.filter(study=study, status__in=[Status.QUEUED, Status.RUNNING])
                 .values_list("pk", flat=True))
    for job_id in ended:
        score_job_fail(job_id=job_id, error=STUDY_CLOSED)
    ScoreChunk.objects.filter(job_id__in=ended, status=ScoreChunk.Status.QUEUED).update(
        status=ScoreChunk.Status.CANCELLED, finished_at=timezone.now())
    return ended


STALLED = (
    "the process running it stopped without finishing it ({count} times without progress: a "
    "restart, or a worker killed for time or memory); start it again, or look at the worker's log"
)


def claim_counts() -> dict[str, Any]:
    """What a claim of a job sets besides its own fields, as update expressions: ``attempts`` one
    more, and the run before it judged by how far it got. That run made progress when its
    ``progress_done`` passed ``progress_seen`` (the furthest any run before it reached): a single
    job counts every item it scored or found stored, a study job every chunk item stored, so a
    run that got no further than those before it did no new work. Such a run is counted in
    ``runs_with_progress``, and ``progress_seen`` moves up to it. PostgreSQL evaluates every
    expression of an update on the row as it was, so a claim that also resets ``progress_done``
    still compares the dead run's."""
    advanced = Q(progress_done__gt=F("progress_seen"))
    return {
        "attempts": F("attempts") + 1,
        "runs_with_progress": F("runs_with_progress") + Case(
            When(advanced, then=Value(1)), default=Value(0), output_field=IntegerField()),
        "progress_seen": Greatest(F("progress_done"), F("progress_seen")),
    }


def runs_without_progress(job: ScoreJob) -> int:
    """How many runs of a stalled job stopped without progress: its claims less those whose
    runs got further than every run before them, the dead run included (its ``progress_done``
    passed ``progress_seen``; see :func:`claim_counts`)."""
    dead_advanced = 1 if job.progress_done > job.progress_seen else 0
    return max(0, job.attempts - job.runs_with_progress - dead_advanced)


def score_jobs_recover(*, study: Study | None = None, lost_before=None) -> dict[str, list[int]]:
    """Find the jobs whose process died and send them again, or fail them after too many tries.

    A job is stalled when it is running and its heartbeat is older than
    ``SCORING_JOB_LEASE_SECONDS``, or when it has waited that long without starting (its message
    may be lost: a job thread's queue dies with its process, a broker may restart empty). A
    stalled job is sent again (its run takes it over and skips what it stored) unless
    ``JOB_MAX_ATTEMPTS`` of its runs stopped without progress (:func:`runs_without_progress`:
    a run that stored more than every run before it does not count, so a job killed by faults
    around it goes on while it moves; one that kills its worker on its own data does not); then
    it is marked failed with the reason in ``errors["job"]``. Sending renews the heartbeat
    first, so two recoveries at once send a job once. ``lost_before``: the broker restarted
    empty at that time, so a job queued (or sent again) before it lost its message now, without
    waiting a lease. Returns ``{"resumed": [ids], "failed": [ids]}``.
    """
    now = timezone.now()
    stale = now - timedelta(seconds=settings.SCORING_JOB_LEASE_SECONDS)
    stalled = Q(status=Status.RUNNING, heartbeat_at__lt=stale)
    # A queued job's message may be gone: a job thread's queue dies with its process, and a
    # broker's with a Redis restarted without its data. Sending it again costs a claim that
    # finds the job taken when the first message was only slow.
    waited = max(stale, lost_before) if lost_before is not None else stale
    stalled |= Q(status=Status.QUEUED, created_at__lt=waited) & (
        Q(heartbeat_at__isnull=True) | Q(heartbeat_at__lt=waited)
    )
    found = ScoreJob.objects.filter(stalled)
    if study is not None:
        found = found.filter(study=study)
    jobs = list(found)
    report: dict[str, list[int]] = {"resumed": [], "failed": []}
    # What the broker holds: a job whose message waits its turn is not sent again (one
    # message per job, however long the queue).
    look = broker_look() if jobs else None
    for job in jobs:
        if not message_lost(look, JOB_TASK, [job.pk], running=job.status == Status.RUNNING,
                            lease_seconds=settings.SCORING_JOB_LEASE_SECONDS):
            continue
        # Only the recovery whose conditional update changes the row acts on the job.
        mine = ScoreJob.objects.filter(
            pk=job.pk, status=job.status, heartbeat_at=job.heartbeat_at
        )
        strikes = runs_without_progress(job)
        if strikes >= settings.JOB_MAX_ATTEMPTS:
            errors = {**job.errors, "job": STALLED.format(count=strikes)}
            if mine.update(status=Status.FAILED, errors=errors, finished_at=now):
                logger.warning("scoring job %s stalled %s times without progress: failed", job.pk,
                               strikes)
                report["failed"].append(job.pk)
            continue
        # A new task id, which only the message sent now carries: it may take the job over
        # from a run presumed dead, and an older message of the job arriving late cannot take
        # it from the run that holds it (a claim keeps its message's id).
        if mine.update(heartbeat_at=now, task_id=uuid.uuid4().hex):
            logger.warning("scoring job %s stalled: sending it again", job.pk)
            score_job_enqueue(job_id=job.pk)
            report["resumed"].append(job.pk)
    return report


# --------------------------------------------------------------------------- running jobs


@dataclass(frozen=True)
class Progress:
    done: int
    total: int
    step: str


class _Superseded(Exception):
    """Another run took the job over, or the job was ended meanwhile: this one stops."""


class _Withdrawn(Exception):
    """The verdict a verdict job scores is no longer final: the job stops, storing nothing more."""


# A study job plans, then fans out into chunks that any worker runs: scoring.chunks.study_job_run.
# scoring.chunks builds on this module, so scoring/apps.py hands its runner over here instead of
# this module importing it (no import circle, see pyproject.toml).
STUDY_JOB_RUNNERS: list[Callable[..., str]] = []


def content_hash(value: Any) -> str:
    """The sha256 of a JSON value, keys sorted: the same value, the same hash."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def dependency_hash(item: Any, label: str, version: str, extra: str = "") -> str:
    """What an item's stored value depends on (see scoring.chunks), as one hash: a study job's
    chunks and a verdict's job store the same hash for the same inputs."""
    return content_hash([
        item.candidate, list(item.references), list(item.reference_ids),
        list(item.reference_captions), item.subject, item.caption_id, item.annotation_id,
        item.window_id, label, version, extra,
    ])


def score_job_run(
    *,
    job_id: int,
    task_id: str = "",
    on_progress: Callable[[Progress], None] | None = None,
) -> str:
    """Claim the job and run it to the end. Returns what happened: ``ran``; ``finished`` (it
    already was: nothing to do); ``busy`` (another run holds it); ``missing``; ``superseded``
    (another run took it over while this one worked). Database errors propagate (retry).

    A study job only plans here: it fans out into chunks that any worker runs
    (:func:`scoring.chunks.study_job_run`)."""
    if ScoreJob.objects.filter(pk=job_id, kind=ScoreJob.Kind.STUDY).exists():
        (study_job_run,) = STUDY_JOB_RUNNERS
        return study_job_run(job_id=job_id, task_id=task_id, on_progress=on_progress)
    token = uuid.uuid4().hex
    now = timezone.now()
    stale = now - timedelta(seconds=settings.SCORING_JOB_LEASE_SECONDS)
    claimable = Q(status=Status.QUEUED) | Q(status=Status.RUNNING, heartbeat_at__lt=stale)
    if task_id:
        claimable |= Q(status=Status.RUNNING, task_id=task_id)
    # The claim keeps its message's id: only that message (a retry, a redelivery) or a newer one
    # sent by recovery may take the job over while its heartbeat is fresh, never a duplicate.
    claimed = ScoreJob.objects.filter(claimable, pk=job_id).update(
        status=Status.RUNNING,
        run_token=token,
        **({"task_id": task_id} if task_id else {}),
        **claim_counts(),
        started_at=Coalesce(F("started_at"), Value(now)),
        heartbeat_at=now,
        finished_at=None,
        progress_done=0,
        errors={},
    )
    if claimed != 1:
        job = ScoreJob.objects.filter(pk=job_id).first()
        if job is None:
            return "missing"
        return "finished" if job.finished else "busy"
    job = ScoreJob.objects.select_related("study", "annotation__caption").get(pk=job_id)
    run = _Run(job, token, on_progress)
    try:
        run.execute()
    except _Superseded:
        logger.warning("scoring job %s was taken over by another run", job_id)
        return "superseded"
    except _Withdrawn:
        run.errors["job"] = WITHDRAWN
        try:
            run.finish(Status.FAILED)
        except _Superseded:
            return "superseded"
        return "withdrawn"
    except DATABASE_ERRORS:
        raise
    except Exception as error:  # noqa: BLE001 - recorded on the job, which then ends failed
        logger.exception("scoring job %s failed", job_id)
        run.errors["job"] = _describe(error)
        try:
            run.finish(Status.FAILED)
        except _Superseded:
            return "superseded"
    return "ran"


def _describe(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    return text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS] + "..."


def _chunks(items: Sequence[Item], size: int) -> Iterator[list[Item]]:
    for start in range(0, len(items), max(1, size)):
        yield list(items[start : start + max(1, size)])


@dataclass
class _Run:
    job: ScoreJob
    token: str
    on_progress: Callable[[Progress], None] | None
    errors: dict[str, str] = field(default_factory=dict)
    failures: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    done: int = 0
    total: int = 0
    stored: int = 0
    _idf: list[list[str]] | None = None

    def idf_documents(self) -> list[list[str]]:
        """The study's CIDEr-D idf documents, read once per run."""
        if self._idf is None:
            self._idf = idf_documents(self.job.study)
        return self._idf

    def _claimed(self):
        # Still running: a job ended meanwhile (failed by its task, or its verdict withdrawn)
        # is not brought back to life by this run's next update.
        return ScoreJob.objects.filter(pk=self.job.pk, run_token=self.token, status=Status.RUNNING)

    def _final_rows(self, rows: list[ScoreResult]) -> list[ScoreResult]:
        """The rows whose annotation's verdict is still final and counted, its row locked until the commit
        (an undo waits for it, and its hook then discards what was stored). Raises _Withdrawn
        when a verdict job's own verdict is no longer final."""
        ids = {row.annotation_id for row in rows if row.annotation_id is not None}
        if self.job.kind == ScoreJob.Kind.VERDICT:
            ids.add(self.job.annotation_id)
        if not ids:
            return rows
        # Still counted too: a withdrawn person's verdicts are scored no more (their scores erased).
        final = set(
            counted_annotations(Annotation.objects.select_for_update(of=("self",)))
            .filter(pk__in=ids, state=workflow.APPROVED).order_by("pk").values_list("pk", flat=True)
        )
        if self.job.kind == ScoreJob.Kind.VERDICT and self.job.annotation_id not in final:
            raise _Withdrawn
        return [row for row in rows if row.annotation_id is None or row.annotation_id in final]

    def _advance(self, count: int, step: str, **extra: Any) -> None:
        """Count ``count`` more items done and renew the heartbeat; stop if taken over."""
        self.done = min(self.total, self.done + count)
        if not self._claimed().update(
            progress_done=self.done, heartbeat_at=timezone.now(), **extra
        ):
            raise _Superseded
        if self.on_progress is not None:
            self.on_progress(Progress(self.done, self.total, step))

    def execute(self) -> None:
        units = plan(self.job)
        self.total = sum(len(unit.items) for unit in units)
        if not self._claimed().update(progress_total=self.total):
            raise _Superseded
        for unit in units:
            self.run_unit(unit)
        if not self.errors:
            self.finish(Status.DONE)
        else:
            self.finish(Status.PARTIAL if self.stored else Status.FAILED)

    def finish(self, status: str) -> None:
        now = timezone.now()
        if not self._claimed().update(
            status=status,
            errors=self.errors,
            progress_done=F("progress_total"),
            heartbeat_at=now,
            finished_at=now,
        ):
            raise _Superseded

    def record_error(self, unit: Unit, message: str) -> None:
        """Keep ``message`` under each metric of the unit; the same message for several groups
        of items is said once ("overview, windows: ...")."""
        for key in unit.error_keys():
            groups = self.failures.setdefault(key, {}).setdefault(message, [])
            groups.append(unit.group)
            self.errors[key] = "; ".join(
                f"{', '.join(names)}: {text}" for text, names in self.failures[key].items()
            )

    def run_unit(self, unit: Unit) -> None:
        step = f"{unit.family}{f' ({unit.judge})' if unit.judge else ''}, {unit.group}"
        remaining = list(unit.items)
        failed: dict[str, str] = {}
        try:
            label = families.judge_or_backend(unit.family, unit.judge)
            version = families.metric_version(unit.metrics[0], self.job.splitter,
                                              self.job.study.caption_language)
            if not unit.corpus:
                stored = self._stored_by_this_job(unit, label, version)
                skipped = [item for item in remaining if item.key in stored]
                if skipped:
                    remaining = [item for item in remaining if item.key not in stored]
                    self.stored += len(skipped)
                    self._advance(len(skipped), step)
            size = len(remaining) if unit.corpus else settings.SCORING_CHUNK_SIZE
            while remaining:
                chunk, rest = remaining[:size], remaining[size:]
                rows, chunk_failed = self._score(unit, chunk, label, version)
                failed.update(chunk_failed)
                if not unit.corpus:
                    # The hash a study job plans: a verdict scored here is up to date there.
                    hashes = {item.key: dependency_hash(item, label, version) for item in chunk}
                    for row in rows:
                        row.dep_hash = hashes[row.item_key]
                with transaction.atomic():
                    rows = rows_not_erased(self.job, self._final_rows(rows))
                    _upsert(rows)
                    self._advance(len(chunk), step)
                self.stored += len(rows)
                remaining = rest
        except (_Superseded, _Withdrawn, *DATABASE_ERRORS):
            raise
        except Exception as error:  # noqa: BLE001 - one family failing must not stop the others
            logger.warning("scoring job %s: %s failed: %s", self.job.pk, step, error)
            self.record_error(unit, _describe(error))
            self._advance(len(remaining), step, errors=self.errors)
            return
        if failed:
            key, message = next(iter(failed.items()))
            self.record_error(
                unit, f"{len(failed)} of {len(unit.items)} item(s) failed; {key}: {message}"
            )
            self._advance(0, step, errors=self.errors)

    def _stored_by_this_job(self, unit: Unit, label: str, version: str) -> set[str]:
        """Items of which this job (in an earlier, interrupted run) stored every metric."""
        counts = (
            ScoreResult.objects.filter(
                job=self.job,
                metric__in=unit.metrics,
                judge_or_backend=label,
                metric_version=version,
                subject__in={item.subject for item in unit.items},
            )
            .values("item_key")
            .annotate(n=Count("pk"))
        )
        return {row["item_key"] for row in counts if row["n"] == len(unit.metrics)}

    def _score(
        self, unit: Unit, items: Sequence[Item], label: str, version: str
    ) -> tuple[list[ScoreResult], dict[str, str]]:
        idf = self.idf_documents() if unit.corpus else None
        return score_items(self.job, unit, items, label, version, idf)


def score_items(
    job: ScoreJob,
    unit: Unit,
    items: Sequence[Item],
    label: str,
    version: str,
    idf: Sequence[Sequence[str]] | None = None,
) -> tuple[list[ScoreResult], dict[str, str]]:
    """Score ``items`` with the unit's family; returns the rows to store and the items that
    failed. ``idf``: CIDEr-D's idf documents (reference family)."""
    pairs: list[Pair] = []
    pair_ids: dict[str, list[str]] = {}
    for item in items:
        if unit.corpus or len(item.references) == 1:
            ids = [item.key]
            pairs.append(Pair(item.key, item.candidate, item.references))
        else:
            ids = [f"{item.key}#{n}" for n in range(len(item.references))]
            pairs.extend(
                Pair(pid, item.candidate, (text,))
                for pid, text in zip(ids, item.references, strict=True)
            )
        pair_ids[item.key] = ids
    options = ScoringOptions(
        judge=unit.judge or families.default_judges()[0],
        splitter=job.splitter,
        near_total_cut=job.study.near_total_cut,
        language=job.study.caption_language,
        extra={"idf_documents": idf} if unit.corpus else {},
    )
    outcome = families.score_batch(unit.family, pairs, unit.metrics, options)
    now = timezone.now()
    rows: list[ScoreResult] = []
    failed: dict[str, str] = {}
    for item in items:
        ids = pair_ids[item.key]
        missing = [pid for pid in ids if pid not in outcome.scores]
        if missing:
            failed[item.key] = outcome.errors.get(missing[0], "no score returned")
            continue
        for name in unit.metrics:
            value, detail = _combine(item, ids, name, outcome)
            rows.append(
                ScoreResult(
                    study_id=job.study_id,
                    caption_id=item.caption_id,
                    window_id=item.window_id,
                    annotation_id=item.annotation_id,
                    subject=item.subject,
                    item_key=item.key,
                    metric=name,
                    judge_or_backend=label,
                    metric_version=version,
                    value=value,
                    detail=detail,
                    job_id=job.pk,
                    computed_at=now,
                )
            )
    return rows, failed


def _combine(
    item: Item, ids: Sequence[str], name: str, outcome: families.BatchOutcome
) -> tuple[float | None, dict[str, Any]]:
    """An item's value of ``name``: its pair's, or the mean over one pair per reference."""
    values = [outcome.scores[pid].get(name) for pid in ids]
    details = [outcome.details.get(pid, {}).get(name) or {} for pid in ids]
    if len(ids) == 1:
        detail = dict(details[0])
        if item.reference_ids:
            detail["reference_ids"] = list(item.reference_ids)
        if item.reference_captions:
            detail["reference_captions"] = list(item.reference_captions)
        return values[0], detail
    finite = [value for value in values if value is not None]
    per_reference = []
    for position, (value, extra) in enumerate(zip(values, details, strict=True)):
        entry: dict[str, Any] = {"value": value}
        if item.reference_ids:
            entry["reference_id"] = item.reference_ids[position]
        if extra:
            entry["detail"] = extra
        per_reference.append(entry)
        if item.reference_captions:
            entry["reference_caption"] = item.reference_captions[position]
    mean = fmean(finite) if len(finite) == len(values) else None
    return mean, {"aggregate": "mean over references", "per_reference": per_reference}


UPSERT_FIELDS = ["item_key", "metric", "judge_or_backend", "metric_version"]


def _upsert(rows: Sequence[ScoreResult]) -> None:
    """Insert rows, or update the row with the same key: no duplicates, whoever runs first."""
    if not rows:
        return
    ScoreResult.objects.bulk_create(
        rows,
        update_conflicts=True,
        unique_fields=UPSERT_FIELDS,
        update_fields=[
            "study",
            "caption",
            "window",
            "annotation",
            "subject",
            "value",
            "detail",
            "dep_hash",
            "job",
            "computed_at",
        ],
    )


# --------------------------------------------------------------------------- reading


def score_summary(*, study: Study) -> list[dict[str, Any]]:
    """Per subject, metric, judge and version: how many items, and the mean, min and max."""
    rows = (
        ScoreResult.objects.filter(study=study)
        .values("subject", "metric", "judge_or_backend", "metric_version")
        .annotate(count=Count("pk"), mean=Avg("value"), minimum=Min("value"), maximum=Max("value"))
        .order_by("subject", "metric", "judge_or_backend", "metric_version")
    )
    return list(rows)
