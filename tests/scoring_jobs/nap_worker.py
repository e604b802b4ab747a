"""`python -m tests.scoring_jobs.nap_worker worker [options]`: a Celery worker of Redline with one
task more, ``tests.nap``, which marks in a folder when it starts and when it ends: a job as long
as a test needs, that touches neither the database nor the broker."""

import sys
import time
from pathlib import Path

from config.celery import app


@app.task(name="tests.nap")
def nap(folder: str, name: str, seconds: float) -> None:
    Path(folder, f"{name}.started").touch()
    time.sleep(seconds)
    Path(folder, f"{name}.done").touch()


if __name__ == "__main__":
    app.worker_main(sys.argv[1:])
