"""LLMFactsF1 on the profile page: per model, from a real verdict job against a local LLM server
process (the scripted one), and the facts behind a score on request, escaped."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from django.urls import reverse

from annotation.models import Annotation
from scoring.models import ScoreResult
from scoring.services import score_job_create, score_job_run
from tests.scoring.llmfacts_fake_server import FakeChatServer

pytestmark = pytest.mark.django_db

FACT = "A <script>alert(1)</script> cat sleeps."
LABEL = {"fact": 1, "reason": "It <b>says</b> so.", "label": "entailment"}


@pytest.fixture(scope="module")
def llm_server() -> Iterator[FakeChatServer]:
    server = FakeChatServer()
    yield server
    server.stop()


@pytest.fixture
def llmfacts_settings(settings, llm_server, tmp_path):
    # Every text gets one fact and a copy of the prompt's worked example (dropped); every check
    # entails the one fact: LLMFactsF1 = 1 for every pair.
    llm_server.script(
        {
            "match": ["You split video descriptions"],
            "responses": [{"content": json.dumps({"facts": [FACT, "Two men wear red coats."]})}],
        },
        {
            "match": ["You check facts"],
            "responses": [{"content": json.dumps({"labels": [LABEL]})}],
        },
        response_format=["json_schema"],
    )
    settings.LLMFACTS_BASE_URL = llm_server.base_url
    settings.LLMFACTS_MODEL = "page-test-llm"
    settings.LLMFACTS_CACHE_DIR = tmp_path / "llmfacts-cache"
    return settings


def test_the_profile_page_shows_llmfacts_per_model_and_the_facts_on_request(
    client, scripted, personas, llmfacts_settings
):
    for annotation in Annotation.objects.filter(caption__clip__study=scripted, state="approved"):
        job = score_job_create(
            study=scripted, kind="verdict", annotation=annotation, metrics=["llmfacts_f1"],
            enqueue=False,
        )
        score_job_run(job_id=job.pk)
        job.refresh_from_db()
        assert job.status == "done", job.errors
    stored = ScoreResult.objects.filter(metric="llmfacts_f1")
    assert stored.exists()
    assert set(stored.values_list("metric_version", flat=True)) == {"llmfacts-v2+constrained"}
    assert set(stored.values_list("judge_or_backend", flat=True)) == {"page-test-llm"}

    client.force_login(personas["researcher"])
    page = client.get(reverse("profiles", args=[scripted.slug])).content.decode()
    table = page[page.index('id="llmfacts-by-model"'):page.index("Corrected captions")]
    for model in ("Alpha", "Bravo"):
        assert f'data-model="{model}" data-subject="overview"' in table
    assert "1.000" in table and "llmfacts-v2+constrained" in table

    overview = stored.filter(subject="overview").first()
    facts = client.get(reverse("profile-llmfacts", args=[scripted.slug, overview.pk]))
    assert facts.status_code == 200
    body = facts.content.decode()
    assert "A &lt;script&gt;alert(1)&lt;/script&gt; cat sleeps." in body
    assert "<script>alert" not in body
    assert "It &lt;b&gt;says&lt;/b&gt; so." in body and "entailment" in body
    assert "json_schema" in body
    assert "2 facts copied from the prompt's worked example dropped before checking." in body
    assert "red coats" not in body


def test_a_result_of_another_study_is_not_found(client, scripted, other_study, personas):
    client.force_login(personas["researcher"])
    response = client.get(reverse("profile-llmfacts", args=[scripted.slug, 999999]))
    assert response.status_code == 404
