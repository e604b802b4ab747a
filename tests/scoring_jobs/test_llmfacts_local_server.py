"""A verdict job scoring LLMFactsF1 against the real local LLM server (SmolLM2-135M served by
llama-cpp-python), killed mid-job: the job records the failure, keeps what was stored, and a
new job over the same verdict finishes, reusing every answer the server gave before it died."""

from __future__ import annotations

import threading
import time

import pytest

from scoring.metrics.llmfacts.local_server import LocalServer
from scoring.models import ScoreResult
from scoring.services import score_job_create, score_job_run
from tests.conftest import smollm2_for_local_server

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


@pytest.fixture
def model_path():
    return smollm2_for_local_server()


def llmfacts_job(approved):
    return score_job_create(
        study=approved.caption.clip.study, kind="verdict", annotation=approved,
        metrics=["llmfacts_f1"], enqueue=False,
    )  # fmt: skip


def test_a_server_killed_mid_job_leaves_the_job_resumable(
    approved, settings, tmp_path, model_path
):
    cache = tmp_path / "llmfacts-cache"
    first = LocalServer(model_path, threads=1, log_path=tmp_path / "server-1.log").start()
    settings.LLMFACTS_BASE_URL = first.base_url
    settings.LLMFACTS_MODEL = first.model
    settings.LLMFACTS_CACHE_DIR = cache
    settings.LLMFACTS_RETRIES = 0
    settings.LLMFACTS_CONCURRENCY = 1
    settings.LLMFACTS_TIMEOUT_S = 600
    settings.SCORING_CHUNK_SIZE = 1

    def kill_after_three_answers() -> None:
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline:
            if cache.is_dir() and len(list(cache.glob("*.json"))) >= 3:
                first.kill()
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_after_three_answers)
    killer.start()
    try:
        job = llmfacts_job(approved)
        score_job_run(job_id=job.pk)
    finally:
        killer.join()
        first.stop()
    job.refresh_from_db()
    assert job.status in ("partial", "failed")
    assert "llmfacts_f1" in job.errors
    stored_before = set(ScoreResult.objects.filter(job=job).values_list("item_key", flat=True))
    answers_before = {path.name: path.stat().st_mtime_ns for path in cache.glob("*.json")}
    assert len(answers_before) >= 3

    # The server comes back on the same address; a new job over the same verdict completes.
    with LocalServer(model_path, port=first.port, threads=1, log_path=tmp_path / "server-2.log"):
        again = llmfacts_job(approved)
        score_job_run(job_id=again.pk)
    again.refresh_from_db()
    assert again.status == "done", again.errors
    items = set(ScoreResult.objects.filter(metric="llmfacts_f1").values_list("item_key", flat=True))
    assert len(items) == 5 and stored_before <= items
    # Every answer given before the kill was reused, not asked again (the files are untouched).
    for name, mtime in answers_before.items():
        assert (cache / name).stat().st_mtime_ns == mtime
    versions = set(ScoreResult.objects.values_list("metric_version", flat=True))
    assert versions == {"llmfacts-v2+constrained"}
