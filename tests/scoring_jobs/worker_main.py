"""`python -m tests.scoring_jobs.worker_main worker [options]`: a Celery worker of Redline with the
slow test metric registered (see slow_family.py), for the worker-kill test."""

import sys

import tests.scoring_jobs.slow_family  # noqa: F401 - registers the metric in this process
from config.celery import app

if __name__ == "__main__":
    app.worker_main(sys.argv[1:])
