"""A real Celery worker, fed through Redis, makes a clip's proxy and poster."""

import time

import pytest

from annotation.models import Clip
from annotation.services.clips import clip_import_file

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def worker(start_worker):
    return start_worker()


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
