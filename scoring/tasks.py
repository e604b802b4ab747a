"""Celery tasks of the scoring app: thin, idempotent, taking ids."""

from __future__ import annotations

from celery import Task, shared_task
from django.db import InterfaceError, OperationalError

from scoring.services import score_job_fail, score_job_run

# Worth trying again: the database or broker was briefly unreachable. A job's writes are upserts
# keyed by item and metric, so running it again after one of these cannot duplicate anything.
TRANSIENT_ERRORS = (OperationalError, InterfaceError, ConnectionError, TimeoutError)


class ScoreJobTask(Task):
    def on_failure(self, exc, task_id, args, kwargs, einfo):
        """The task gave up (retries spent, or an unexpected error): say so on the job."""
        job_id = args[0] if args else kwargs.get("job_id")
        if job_id is not None:
            score_job_fail(job_id=job_id, error=f"{type(exc).__name__}: {exc}")


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
