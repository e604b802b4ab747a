"""The workers' recovery clock (scoring.jobs_recovery.RecoveryClock) against a Redis of the test's
own: a Redis restarted without its data lost the messages it held, so the jobs queued before the
restart are sent again at the next round, not a lease later."""

from __future__ import annotations

import pytest
import redis
from django.core.files.base import ContentFile

from annotation.models import CaptionImportJob
from annotation.services.caption_jobs import caption_import_job_create
from scoring.jobs_recovery import RecoveryClock, broker_identity
from tests.outage import RedisServer, jobs_sent_to

pytestmark = pytest.mark.django_db


@pytest.fixture
def broker(tmp_path, settings):
    server = RedisServer(tmp_path)
    server.start()
    settings.CELERY_BROKER_URL = server.url
    with jobs_sent_to(server.url, settings):
        yield server
    server.stop()


def queued_messages(server: RedisServer) -> int:
    client = redis.Redis.from_url(server.url)
    try:
        return client.llen("redline")
    finally:
        client.close()


def test_jobs_queued_before_redis_restarted_empty_are_sent_again_at_the_next_round(
    study, broker, django_capture_on_commit_callbacks
):
    job = caption_import_job_create(study=study, upload=ContentFile(b'{"clip": "a"}'), file_name="c.jsonl",
                                    enqueue=False)  # as if its message had been sent
    clock = RecoveryClock()
    clock.identity = broker_identity()
    assert clock.identity is not None
    assert clock.round()["caption imports"] == {"resumed": [], "failed": []}  # same Redis: waits a lease

    broker.stop()
    broker.start()  # empty: the message is gone
    assert queued_messages(broker) == 0
    with django_capture_on_commit_callbacks(execute=True):  # recovery sends once committed
        done = clock.round()
    assert done["caption imports"] == {"resumed": [job.pk], "failed": []}
    assert queued_messages(broker) == 1
    assert CaptionImportJob.objects.get(pk=job.pk).state == "queued"
    assert clock.round()["caption imports"] == {"resumed": [], "failed": []}  # sent once


def test_the_clock_sees_no_restart_while_redis_is_stopped(study, broker):
    clock = RecoveryClock()
    clock.identity = broker_identity()
    before = clock.identity
    broker.stop()
    assert broker_identity() is None
    clock.round()
    assert clock.identity == before
