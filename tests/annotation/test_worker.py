"""A real Celery worker, fed through Redis, makes a clip's proxy and poster."""

import os
import subprocess
import sys
import time

import pytest
from django.db import connection

from annotation.models import Clip
from annotation.services.clips import clip_import_file
from config.celery import app as celery_app
from tests.conftest import REPO

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def worker(media_root):
    """A worker process on the test database, consuming the broker `make test` configured.

    `make test` points CELERY_BROKER_URL at a test Redis database and keeps tasks eager;
    here the app stops being eager, so the service's on_commit sends the job to Redis.
    """
    broker = celery_app.conf.broker_url
    if not broker.startswith("redis://"):
        pytest.fail("CELERY_BROKER_URL is not a Redis URL: run the suite with `make test`")
    db = connection.settings_dict
    env = {
        **os.environ,
        "MEDIA_ROOT": str(media_root),
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "CELERY_TASK_ALWAYS_EAGER": "0",
    }
    celery_app.control.purge()  # jobs left in the test queue by an earlier, interrupted run
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo",
         "--loglevel=WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat"],
        cwd=REPO, env=env,
    )
    celery_app.conf.task_always_eager = False
    yield process
    celery_app.conf.task_always_eager = True
    process.terminate()
    process.wait(timeout=30)


@pytest.mark.postgres
def test_worker_makes_the_proxy_and_poster_after_the_import_commits(study, clip_files, worker):
    clip = clip_import_file(study=study, path=clip_files["c"])  # commits: on_commit sends the job
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        clip.refresh_from_db()
        if clip.poster and clip.proxy:
            break
        assert worker.poll() is None, "the worker died"
        time.sleep(0.5)
    assert clip.proxy and clip.poster, "the worker did not prepare the clip in 90 s"
    assert Clip.objects.get(pk=clip.pk).media_error == ""
