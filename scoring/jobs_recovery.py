"""Recover every kind of job whose message was lost or whose process died: jobs kept while the
broker did not answer, scoring jobs, final verdicts whose scoring job was never made, profile
exports, clip media, caption imports.

Runs on a clock in every worker (:func:`recovery_clock_start`, every ``JOB_RECOVERY_SECONDS``,
from ``config/celery.py``): a job started while Redis was stopped is sent within that long of
Redis answering again, with no page opened and no cron line. Also run when a worker starts, by
``manage.py recover_jobs``, and by the job pages for their own study's jobs. Recoveries running
at once in several workers act on each job once (each ``*_recover`` claims what it sends).
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime

from django.conf import settings
from django.db import connections
from django.utils import timezone

from annotation.jobs import unsent_jobs_send
from annotation.models import Study
from annotation.services.caption_jobs import caption_import_jobs_recover
from annotation.services.clips import clips_media_recover
from scoring.profile_jobs import profile_jobs_recover
from scoring.services import score_jobs_recover
from scoring.verdict_jobs import score_verdicts_recover

logger = logging.getLogger(__name__)


def jobs_recover(*, lost_before: datetime | None = None, media: bool = True) -> dict[str, dict[str, list]]:
    """Send the kept jobs, send stalled jobs again or fail them (see each ``*_recover``);
    return what was done. ``lost_before``: the broker restarted empty at that time, so every
    job queued before it lost its message and is sent again now. ``media``: whether to send
    again the media jobs of clips still without a poster (which have no record of being sent:
    the clock does so once a lease)."""
    unsent = unsent_jobs_send()
    profiles: dict[str, list] = {"resumed": [], "failed": []}
    for study in Study.objects.all():
        found = profile_jobs_recover(study=study,
                                     lost_before=lost_before.timestamp() if lost_before else None)
        for key, ids in found.items():
            profiles[key].extend(ids)
    media_age = settings.SCORING_JOB_LEASE_SECONDS
    if lost_before is not None:
        media_age = min(media_age, max(0, int((timezone.now() - lost_before).total_seconds())))
    return {
        "kept while the broker did not answer": {"resumed": unsent, "failed": []},
        "scoring": score_jobs_recover(lost_before=lost_before),
        "verdicts without their scoring job": score_verdicts_recover(),
        "profiles": profiles,
        "media": {
            "resumed": clips_media_recover(older_than_seconds=media_age) if media or lost_before else [],
            "failed": [],
        },
        "caption imports": caption_import_jobs_recover(lost_before=lost_before),
    }


def broker_identity() -> str | None:
    """The Redis broker's run id, which changes when it restarts (and loses the messages it held,
    without persistence); None for another broker or one that does not answer."""
    url = settings.CELERY_BROKER_URL
    if settings.JOB_RUNNER != "celery" or not url.startswith(("redis://", "rediss://")):
        return None
    import redis

    try:
        client = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)
        try:
            return str(client.info("server")["run_id"])
        finally:
            client.close()
    except Exception:  # noqa: BLE001 - not answering: the clock looks again next round
        return None


class RecoveryClock:
    """One round of the workers' recovery clock: recovery, and when the broker restarted since the
    last round (its identity changed), recovery of every job queued before the restart."""

    def __init__(self) -> None:
        self.identity: str | None = None
        self.media_at = time.monotonic()  # a worker that starts has just sent them

    def round(self) -> dict[str, dict[str, list]]:
        now = timezone.now()
        identity = broker_identity()
        restarted = identity is not None and self.identity is not None and identity != self.identity
        if identity is not None:
            self.identity = identity
        if restarted:
            logger.warning("the broker restarted: jobs queued before %s are sent again", now)
        media = time.monotonic() - self.media_at >= settings.SCORING_JOB_LEASE_SECONDS
        if media:
            self.media_at = time.monotonic()
        return jobs_recover(lost_before=now if restarted else None, media=media)


def recovery_clock_start(*, every_seconds: float, stop: threading.Event | None = None) -> threading.Thread:
    """Run :func:`jobs_recover` every ``every_seconds`` in a daemon thread of this process (a
    worker's) until ``stop`` is set; a round that fails (the database away) is logged and the
    next one tries again."""
    stop = stop or threading.Event()
    clock = RecoveryClock()
    clock.identity = broker_identity()

    def tick() -> None:
        while not stop.wait(every_seconds):
            try:
                done = clock.round()
                sent = {kind: report for kind, report in done.items() if any(report.values())}
                if sent:
                    logger.warning("job recovery: %s", sent)
            except Exception:  # noqa: BLE001 - the clock goes on; the next round tries again
                logger.warning("job recovery could not run this round", exc_info=True)
            finally:
                # This thread's connections are its own: none is kept open between rounds.
                connections.close_all()

    thread = threading.Thread(target=tick, name="redline-job-recovery", daemon=True)
    thread.start()
    return thread
