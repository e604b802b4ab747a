"""Celery tasks of the scoring app: thin, idempotent, taking ids."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from annotation.jobs import TRANSIENT_ERRORS, JobTask
from scoring.chunks import ChunkFailed, score_chunk_fail, score_chunk_run
from scoring.services import score_job_fail, score_job_run


class ScoreJobTask(JobTask):
    job_failed = staticmethod(score_job_fail)


def _chunk_failed(*, job_id: int, error: str) -> None:
    score_chunk_fail(chunk_id=job_id, error=error)


class ScoreChunkTask(JobTask):
    job_failed = staticmethod(_chunk_failed)


@shared_task(
    base=ScoreJobTask,
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=TRANSIENT_ERRORS,
    retry_backoff=True,
    retry_backoff_max=300,
    retry_jitter=True,
    max_retries=6,
)
def run_score_job(self, job_id: int) -> str:
    """Run a scoring job (a study job: plan its chunks and send them); running it again (a
    retry, a redelivery) resumes or does nothing."""
    return score_job_run(job_id=job_id, task_id=self.request.id or "")


@shared_task(
    base=ScoreChunkTask,
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=TRANSIENT_ERRORS,
    retry_backoff=True,
    retry_backoff_max=300,
    retry_jitter=True,
    max_retries=6,
)
def run_score_chunk(self, chunk_id: int) -> str:
    """Score one chunk of a study job; a chunk whose family raised is tried again
    ``SCORING_CHUNK_RETRIES`` times, then recorded failed (the job's other chunks go on)."""
    try:
        return score_chunk_run(chunk_id=chunk_id, task_id=self.request.id or "")
    except ChunkFailed as error:
        if self.request.retries < settings.SCORING_CHUNK_RETRIES:
            countdown = settings.SCORING_CHUNK_RETRY_SECONDS * 2**self.request.retries
            raise self.retry(
                countdown=countdown, max_retries=settings.SCORING_CHUNK_RETRIES
            ) from error
        score_chunk_fail(chunk_id=chunk_id, error=str(error))
        return "failed"
