"""Celery tasks of the scoring app: thin, idempotent, taking ids."""

from __future__ import annotations

from celery import shared_task

from annotation.jobs import TRANSIENT_ERRORS, JobTask
from scoring.services import score_job_fail, score_job_run


class ScoreJobTask(JobTask):
    job_failed = staticmethod(score_job_fail)


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
    """Run a scoring job; running it again (a retry, a redelivery) resumes or does nothing."""
    return score_job_run(job_id=job_id, task_id=self.request.id or "")
