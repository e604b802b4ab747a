"""The Celery application. Workers start with `celery -A config worker`."""

import logging
import os

from celery import Celery
from celery.signals import worker_ready

from config import broker

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

# A worker whose acknowledgement Redis did not answer goes on taking messages (config/broker.py).
broker.install()
app = Celery("redline")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# The profile export's task lives in scoring/profile_tasks.py, beside the scoring jobs' tasks.py.
app.autodiscover_tasks(related_name="profile_tasks")


@worker_ready.connect
def recover_stalled_jobs(**_: object) -> None:
    """A worker that starts resumes (or fails) the jobs a dead process left running, then keeps
    doing so on a clock (``JOB_RECOVERY_SECONDS``): a job kept while the broker did not answer
    is sent once it answers again, without a page opened or a cron line."""
    from django.conf import settings

    from scoring.jobs_recovery import jobs_recover, recovery_clock_start

    try:
        jobs_recover()
    except Exception:  # noqa: BLE001 - a worker must start even when recovery cannot run
        logging.getLogger(__name__).exception("could not recover stalled jobs")
    if settings.JOB_RECOVERY_SECONDS > 0:
        recovery_clock_start(every_seconds=settings.JOB_RECOVERY_SECONDS)
