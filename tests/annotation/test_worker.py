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
def redis_url():
    url = os.environ.get("REDLINE_TEST_REDIS_URL")
    if not url:
        pytest.fail("REDLINE_TEST_REDIS_URL is not set: run the suite with `make test`")
    return url


@pytest.fixture
def worker(redis_url, media_root):
    """A worker process on the test database, consuming from Redis; the app sends there too."""
    db = connection.settings_dict
    env = {
        **os.environ,
        "CELERY_BROKER_URL": redis_url,
        "MEDIA_ROOT": str(media_root),
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
    }
    queue = f"redline-test-{os.getpid()}"
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo", "-Q", queue,
         "--loglevel=WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat"],
        cwd=REPO, env=env,
    )
    keys = ("broker_url", "task_always_eager", "task_default_queue")
    saved = {key: celery_app.conf[key] for key in keys}
    celery_app.conf.update(broker_url=redis_url, task_always_eager=False, task_default_queue=queue)
    yield process
    celery_app.conf.update(saved)
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
