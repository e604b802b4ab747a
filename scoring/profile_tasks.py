"""The Celery task of the web's profile export: thin, idempotent, taking ids.

Kept apart from ``scoring/tasks.py`` (the scoring jobs). The worker finds it through
``app.autodiscover_tasks(related_name="profile_tasks")`` in ``config/celery.py``.
"""

from __future__ import annotations

import logging

from celery import Task, shared_task

from annotation.jobs import TRANSIENT_ERRORS, broker_unreachable, job_keep
from scoring.profile_jobs import ProfileJobPostponed, profile_job_run

logger = logging.getLogger(__name__)


class ProfileExportTask(Task):
    """When the export's retries are spent on the database, the broker or a full disk, the job
    is kept to be sent again by the recovery clock (annotation.jobs): not the job's fault."""

    def on_failure(self, exc, task_id, args, kwargs, einfo):
        if not (isinstance(exc, (ProfileJobPostponed, *TRANSIENT_ERRORS)) or broker_unreachable(exc)):
            return  # profile_job_run recorded anything else on the job
        queue = (getattr(self.request, "delivery_info", None) or {}).get("routing_key")
        try:
            # By its import path (its Celery name is not one): unsent_jobs_send imports it.
            job_keep("scoring.profile_tasks.export_profile", args=list(args), task_id=task_id, queue=queue,
                     error=exc)
        except Exception:  # noqa: BLE001 - the database is still away: the job's lease recovers it
            logger.warning("profile export %s could not be kept to run again", tuple(args), exc_info=True)


@shared_task(name="scoring.export_profile", base=ProfileExportTask, bind=True, acks_late=True,
             reject_on_worker_lost=True, ignore_result=True,
             autoretry_for=(ProfileJobPostponed, *TRANSIENT_ERRORS), retry_backoff=True,
             retry_backoff_max=300, retry_jitter=True, max_retries=6)
def export_profile(self, study_id: int, job_id: str) -> str | None:
    """Run a profile export job; running it again leaves a finished job as it is. Tried again
    later while the database does not answer or the disk is full (the job stays queued)."""
    status = profile_job_run(study_id=study_id, job_id=job_id)
    return status["state"] if status else None
