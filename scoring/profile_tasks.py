"""The Celery task of the web's profile export: thin, idempotent, taking ids.

Kept apart from ``scoring/tasks.py`` (the scoring jobs). The worker finds it through
``app.autodiscover_tasks(related_name="profile_tasks")`` in ``config/celery.py``.
"""

from __future__ import annotations

from celery import shared_task

from scoring.profiles import profile_job_run


@shared_task(name="scoring.export_profile", acks_late=True, reject_on_worker_lost=True,
             ignore_result=True)
def export_profile(study_id: int, job_id: str) -> str | None:
    """Run a profile export job; running it again leaves a finished job as it is."""
    status = profile_job_run(study_id=study_id, job_id=job_id)
    return status["state"] if status else None
