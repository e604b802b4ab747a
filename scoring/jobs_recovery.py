"""Recover every kind of job whose message was lost or whose process died: jobs kept while the
broker did not answer, scoring jobs, profile exports, clip media, caption imports.

Runs on a clock in every worker (:func:`recovery_clock_start`, every ``JOB_RECOVERY_SECONDS``,
from ``config/celery.py``): a job started while Redis was stopped is sent within that long of
Redis answering again, with no page opened and no cron line. Also run when a worker starts, by
``manage.py recover_jobs``, and by the job pages for their own study's jobs. Recoveries running
at once in several workers act on each job once (each ``*_recover`` claims what it sends).
"""

from __future__ import annotations

import logging
import threading

from django.conf import settings
from django.db import connections

from annotation.jobs import unsent_jobs_send
from annotation.models import Study
from annotation.services.caption_jobs import caption_import_jobs_recover
from annotation.services.clips import clips_media_recover
from scoring.profiles import profile_jobs_recover
from scoring.services import score_jobs_recover

logger = logging.getLogger(__name__)


def jobs_recover() -> dict[str, dict[str, list]]:
    """Send the kept jobs, send stalled jobs again or fail them (see each ``*_recover``);
    return what was done."""
    unsent = unsent_jobs_send()
    profiles: dict[str, list] = {"resumed": [], "failed": []}
    for study in Study.objects.all():
        for key, ids in profile_jobs_recover(study=study).items():
            profiles[key].extend(ids)
    return {
        "kept while the broker did not answer": {"resumed": unsent, "failed": []},
        "scoring": score_jobs_recover(),
        "profiles": profiles,
        "media": {
            "resumed": clips_media_recover(older_than_seconds=settings.SCORING_JOB_LEASE_SECONDS),
            "failed": [],
        },
        "caption imports": caption_import_jobs_recover(),
    }


def recovery_clock_start(*, every_seconds: float, stop: threading.Event | None = None) -> threading.Thread:
    """Run :func:`jobs_recover` every ``every_seconds`` in a daemon thread of this process (a
    worker's) until ``stop`` is set; a round that fails (the database away) is logged and the
    next one tries again."""
    stop = stop or threading.Event()

    def tick() -> None:
        while not stop.wait(every_seconds):
            try:
                done = jobs_recover()
                sent = {kind: report for kind, report in done.items() if any(report.values())}
                if sent:
                    logger.warning("job recovery: %s", sent)
            except Exception:  # noqa: BLE001 - the clock goes on; the next round tries again
                logger.warning("job recovery could not run this round", exc_info=True)
            finally:
                # This thread's connections are its own: none is kept open between rounds.
                connections.close_all()

    clock = threading.Thread(target=tick, name="redline-job-recovery", daemon=True)
    clock.start()
    return clock
