"""While a study is being set up, its annotators and QC reviewers see nothing of its work.

Every read route (from the URL resolver, as the permission sweep finds them, so a route added
later is swept too) is asked by an annotator and a reviewer of a study in setup whose captions
are already assigned: no answer may carry a caption's text, a clip's name or a reference, and
no clip's media may be served. The one rule is annotation.permissions.sees_study_work.
"""

from __future__ import annotations

import pytest
from django.db import transaction
from django.test import Client

from annotation.models import Annotation, Reference
from annotation.permissions import sees_study_work
from annotation.services.workflow import annotations_assign
from tests.annotation.studybuild import SECRET_MODEL, caption_record, captions_add, fake_clip
from tests.annotation.test_permissions_sweep import ROUTES, Expect, request_as, url_for
from tests.conftest import in_setup

pytestmark = pytest.mark.django_db

CAPTION_WORD = "xylophone"  # in every caption of the study
CLIP_NAME = "okapi-clip"
REFERENCE_WORD = "marimba"
MARKS = (CAPTION_WORD, CLIP_NAME, REFERENCE_WORD, SECRET_MODEL)

READ_ROUTES = [
    pytest.param(route, id=route.key)
    for route in ROUTES
    if not route.admin and "GET" in route.methods
]


@pytest.fixture
def setup_world(study, other_study, personas):
    """Study s1 in setup, its one clip captioned by two models and assigned to the annotator."""
    with in_setup(study):
        clip = fake_clip(study, CLIP_NAME)
        captions_add(study, [caption_record(CLIP_NAME, SECRET_MODEL, words=CAPTION_WORD),
                             caption_record(CLIP_NAME, "Other-Model", words=CAPTION_WORD)])
        Reference.objects.create(clip=clip, source="expert", text=f"A {REFERENCE_WORD}.", text_sha256="1" * 64)
        annotations_assign(study=study, annotators=[personas["annotator"]], design="clip_blocks")
        yield {
            "study": study,
            "clip": clip,
            "annotation": Annotation.objects.filter(annotator=personas["annotator"]).first(),
            "personas": personas,
            "model": study.candidate_models.get(name=SECRET_MODEL),
        }


def _llmfacts_url(world) -> str:
    """The LLMFactsF1 facts of the assigned annotation (the sweep's helper needs an approved one)."""
    from django.apps import apps
    from django.urls import reverse
    from django.utils import timezone

    item = world["annotation"]
    result = apps.get_model("scoring", "ScoreResult").objects.create(
        study=world["study"], caption=item.caption, annotation=item, subject="overview",
        item_key=f"annotation:{item.pk}:overview", metric="llmfacts_f1", judge_or_backend="llm",
        metric_version="llmfacts-v1+constrained", value=1.0,
        detail={"a_to_b": {"checks": []}, "b_to_a": {"checks": []}, "scores": {}}, computed_at=timezone.now(),
    )
    return reverse("profile-llmfacts", kwargs={"slug": world["study"].slug, "result_id": result.pk})


def _body(response) -> str:
    if getattr(response, "streaming", False):
        return ""
    return response.content.decode("utf-8", errors="replace")


def test_the_sweep_covers_the_work_routes():
    keys = {route.values[0].key for route in READ_ROUTES}
    assert {"api-captions", "api-clips", "api-models", "clip", "clip-video", "clip-poster", "review",
            "review-queue", "workspace", "api-annotation", "api-audit", "study"} <= keys


@pytest.mark.parametrize("route", READ_ROUTES)
def test_annotators_and_reviewers_see_nothing_of_a_study_in_setup(route, setup_world):
    if route.key == "profile-llmfacts":
        url = _llmfacts_url(setup_world)
    elif route.key == "api-practice-feedback":  # the annotator's own item (no practice is made in setup)
        url = f"/api/annotations/{setup_world['annotation'].pk}/practice-feedback/"
    else:
        url = url_for(route, setup_world)
    shown = []
    for persona in ("annotator", "reviewer"):
        client = Client()
        client.force_login(setup_world["personas"][persona])
        with transaction.atomic():
            response = request_as(client, "GET", url, Expect(frozenset()))
            transaction.set_rollback(True)
        assert response.status_code < 500, f"GET {url} as {persona}: {response.status_code}"
        body = _body(response)
        if any(mark in body for mark in MARKS):
            shown.append(f"{persona} ({[mark for mark in MARKS if mark in body]})")
        if getattr(response, "streaming", False) and 200 <= response.status_code < 300:
            shown.append(f"{persona} (the clip's media)")
    assert not shown, f"GET {url} shows a study in setup to {shown}"


def test_refusals_say_the_study_is_being_set_up(setup_world):
    client = Client()
    client.force_login(setup_world["personas"]["annotator"])
    answer = client.get("/api/studies/s1/captions/")
    assert answer.status_code == 404
    assert "being set up" in answer.json()["detail"]
    page = client.get("/studies/s1/")
    assert page.status_code == 200 and "being set up" in page.content.decode()


def test_admins_and_researchers_see_the_work_in_setup_and_everyone_once_it_runs(study, setup_world):
    personas = setup_world["personas"]
    for persona in ("admin", "researcher"):
        client = Client()
        client.force_login(personas[persona])
        assert CAPTION_WORD in client.get("/api/studies/s1/captions/").content.decode()
        assert client.get(f"/studies/s1/clips/{CLIP_NAME}/").status_code == 200
    assert not sees_study_work(personas["annotator"], study)
    assert not sees_study_work(personas["reviewer"], study)


def test_the_annotator_sees_the_same_captions_once_the_study_runs(study, personas):
    fake_clip(study, CLIP_NAME)
    captions_add(study, [caption_record(CLIP_NAME, SECRET_MODEL, words=CAPTION_WORD)])
    with in_setup(study):
        annotations_assign(study=study, annotators=[personas["annotator"]], design="clip_blocks")
    client = Client()
    client.force_login(personas["annotator"])
    assert CAPTION_WORD in client.get("/api/studies/s1/captions/").content.decode()
    assert client.get(f"/studies/s1/clips/{CLIP_NAME}/").status_code == 200
