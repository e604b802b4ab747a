"""Recover every kind of job whose process died: scoring jobs, profile exports, clip media,
caption imports.

Run when a worker starts (``config/celery.py``) and by ``manage.py recover_jobs`` (for a cron
line); the job pages also recover their own study's jobs when someone looks at them.
"""

from __future__ import annotations

from django.conf import settings

from annotation.models import Study
from annotation.services.caption_jobs import caption_import_jobs_recover
from annotation.services.clips import clips_media_recover
from scoring.profiles import profile_jobs_recover
from scoring.services import score_jobs_recover


def jobs_recover() -> dict[str, dict[str, list]]:
    """Send stalled jobs again or fail them (see each ``*_recover``); return what was done."""
    profiles: dict[str, list] = {"resumed": [], "failed": []}
    for study in Study.objects.all():
        for key, ids in profile_jobs_recover(study=study).items():
            profiles[key].extend(ids)
    return {
        "scoring": score_jobs_recover(),
        "profiles": profiles,
        "media": {
            "resumed": clips_media_recover(older_than_seconds=settings.SCORING_JOB_LEASE_SECONDS),
            "failed": [],
        },
        "caption imports": caption_import_jobs_recover(),
    }
