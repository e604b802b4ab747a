"""`python -m tests.annotation.import_worker_main worker [options]`: a Celery worker of Redline
whose caption imports store one caption per batch and, after the first batch, wait until the
file named by IMPORT_GATE exists: a test looks at the running import from another process, then
lets it finish."""

import os
import sys
import time
from pathlib import Path

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()

from annotation.services import caption_jobs, captions  # noqa: E402 - after django.setup()
from config.celery import app  # noqa: E402

captions.IMPORT_BATCH = 1
write_progress = caption_jobs.caption_import_progress_write


def progress_then_wait_halfway(*, job_id: int, phase: str, stored: int = 0, total: int = 0) -> None:
    write_progress(job_id=job_id, phase=phase, stored=stored, total=total)
    if phase == caption_jobs.STORING and 0 < stored < total:
        gate = Path(os.environ["IMPORT_GATE"])
        while not gate.exists():
            time.sleep(0.05)


caption_jobs.caption_import_progress_write = progress_then_wait_halfway

if __name__ == "__main__":
    app.worker_main(sys.argv[1:])
