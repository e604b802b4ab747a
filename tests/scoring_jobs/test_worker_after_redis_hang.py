"""A worker whose acknowledgement Redis did not answer (Redis hung as a job ended) goes on taking
messages (config/broker.py). The soak's finding: after a Redis hang, workers alive and idle left
their queue's messages waiting, each having counted the job it could not acknowledge as still in
hand (a prefetch of one: it asked Redis for nothing more)."""

from __future__ import annotations

import time

import pytest
import redis

from tests.outage import RedisServer, jobs_sent_to

pytestmark = [pytest.mark.worker, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

NAP_WORKER = "tests.scoring_jobs.nap_worker"


def wait_for(condition, *, seconds: float, what: str, worker) -> float:
    """Wait until ``condition()``; return how long it took."""
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        if condition():
            return time.monotonic() - started
        assert worker.poll() is None, f"the worker died while waiting for {what}"
        time.sleep(0.1)
    pytest.fail(f"{what} did not happen in {seconds} s")


def test_a_worker_takes_jobs_again_after_redis_hung_while_it_acknowledged_one(
    start_worker, settings, tmp_path
):
    from config.celery import app

    marks = tmp_path / "marks"
    marks.mkdir()
    broker = RedisServer(tmp_path)
    broker.start()
    try:
        # A broker timeout of 1 s: the acknowledgement gives up well within the hang.
        worker = start_worker(NAP_WORKER, CELERY_BROKER_URL=broker.url, CELERY_BROKER_TIMEOUT="1",
                              JOB_RECOVERY_SECONDS="0")
        client = redis.Redis.from_url(broker.url)
        wait_for(lambda: client.exists("_kombu.binding.redline"), seconds=60, what="the worker consuming",
                 worker=worker)
        with jobs_sent_to(broker.url, settings):
            # The solo worker takes two messages at a time (a prefetch of 2): two hangs, each
            # as a job ends, left it asking Redis for none.
            for name in ("first", "second"):
                app.send_task("tests.nap", args=[str(marks), name, 2])
                wait_for((marks / f"{name}.started").exists, seconds=30, what=f"the {name} job starting",
                         worker=worker)
                with broker.hung():  # the job ends and its acknowledgement times out meanwhile
                    wait_for((marks / f"{name}.done").exists, seconds=30, what=f"the {name} job ending",
                             worker=worker)
                    time.sleep(3)
            app.send_task("tests.nap", args=[str(marks), "after", 0])
            took = wait_for((marks / "after.done").exists, seconds=30,
                            what="the job sent after the hang running", worker=worker)
        # Nothing left for Redis to hand out again after the visibility timeout.
        wait_for(lambda: client.hlen("unacked") == 0, seconds=10, what="every job acknowledged in Redis", worker=worker)
        assert client.llen("redline") == 0
        print(f"the job sent after the hang ran {took:.1f} s later")
    finally:
        broker.stop()

