"""The study page's setup checklist and the admin's dashboard: counts from the database, a fixed
number of queries whatever the study's size."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.models import Annotation, Study
from annotation.selectors.dashboard import study_dashboard
from annotation.services.studies import membership_grant
from annotation.services.taxonomy import taxonomy_default
from annotation.services.workflow import (
    annotation_open,
    annotations_assign,
    review_approve,
    review_claim,
    review_return,
)
from scoring.lifecycle import verdicts_not_scored
from scoring.models import ScoreResult
from tests.annotation.studybuild import caption_record, captions_add, complete, fake_clip

pytestmark = pytest.mark.django_db


def build(study, personas, clips: int):
    for number in range(clips):
        fake_clip(study, f"c{number}")
    captions_add(study, [caption_record(f"c{number}") for number in range(clips)])
    annotations_assign(study=study, annotators=[personas["annotator"]])
    return list(Annotation.objects.filter(caption__clip__study=study).order_by("pk"))


def test_an_annotator_with_work_left_and_nothing_done_lately_is_idle(study, personas):
    items = build(study, personas, 2)
    dashboard = study_dashboard(study, idle_minutes=30)
    assert [(p["username"], p["open_items"], p["last_action"]) for p in dashboard["idle"]] == [
        ("annotator", 2, None)]
    annotation_open(annotation=items[0], actor=personas["annotator"])
    assert study_dashboard(study, idle_minutes=30)["idle"] == []
    later = timezone.now() + timedelta(minutes=31)
    (idle,) = study_dashboard(study, idle_minutes=30, now=later)["idle"]
    assert idle["username"] == "annotator" and idle["last_action"] is not None


def test_expired_claims_returns_and_unscored_verdicts_are_counted(study, personas, settings):
    settings.SCORING_ON_FINAL_VERDICT = False
    items = build(study, personas, 3)
    annotator, reviewer = personas["annotator"], personas["reviewer"]
    for item in items:
        complete(item, annotator)
    review_claim(annotation_id=items[0].pk, actor=reviewer)
    Annotation.objects.filter(pk=items[0].pk).update(claim_expires_at=timezone.now() - timedelta(minutes=5))
    review_claim(annotation_id=items[1].pk, actor=reviewer)
    review_return(annotation_id=items[1].pk, actor=reviewer, units=[{"unit": "overview", "comment": "No."}])
    review_claim(annotation_id=items[2].pk, actor=reviewer)
    review_approve(annotation_id=items[2].pk, actor=reviewer)
    dashboard = study_dashboard(study, idle_minutes=30)
    assert dashboard["expired_claims"]["count"] == 1
    assert dashboard["expired_claims"]["items"][0]["reviewer"] == "reviewer"
    assert dashboard["returns"] == [{"username": "annotator", "count": 1}] and dashboard["returns_count"] == 1
    assert verdicts_not_scored(study) == 1
    caption = items[2].caption
    ScoreResult.objects.create(study=study, caption=caption, annotation=items[2], subject="overview",
                               item_key="x", metric="words_changed", metric_version="1", value=1,
                               computed_at=timezone.now())
    assert verdicts_not_scored(study) == 0


def test_the_dashboard_costs_the_same_queries_for_more_data(study, other_study, personas):
    membership_grant(study=other_study, user=personas["annotator"], role="annotator")
    membership_grant(study=other_study, user=personas["reviewer"], role="reviewer")
    small, large = build(study, personas, 1), build(other_study, personas, 6)
    for items in (small, large):
        complete(items[0], personas["annotator"])
        review_claim(annotation_id=items[0].pk, actor=personas["reviewer"])
        review_return(annotation_id=items[0].pk, actor=personas["reviewer"],
                      units=[{"unit": "overview", "comment": "No."}])
    for item in large[1:4]:
        complete(item, personas["annotator"])
        review_claim(annotation_id=item.pk, actor=personas["reviewer"])
    Annotation.objects.filter(state="in_review").update(claim_expires_at=timezone.now() - timedelta(hours=1))
    counts = []
    for target in (study, other_study):
        with CaptureQueriesContext(connection) as queries:
            dashboard = study_dashboard(target, idle_minutes=1, now=timezone.now() + timedelta(hours=2))
            verdicts_not_scored(target)
        counts.append(len(queries))
    assert dashboard["expired_claims"]["count"] == 3 and dashboard["idle"][0]["open_items"] == 3
    assert counts[0] == counts[1] == 6


def test_the_setup_checklist_links_to_what_fixes_each_item(personas, client, make_user):
    study = Study.objects.create(slug="lab", name="Lab", taxonomy=taxonomy_default(), state="setup")
    membership_grant(study=study, user=personas["admin"], role="admin")
    client.force_login(personas["admin"])
    page = client.get("/studies/lab/").content.decode()
    assert 'id="setup-checklist"' in page and 'id="study-start"' in page
    assert 'data-item="clips"' in page and 'href="#imports"' in page and 'href="#assign-form"' in page
    assert "no member is an annotator" in page


def test_the_running_dashboard_is_for_study_admins_only(study, personas, client):
    build(study, personas, 2)
    client.force_login(personas["admin"])
    page = client.get(f"/studies/{study.slug}/?idle_minutes=5").content.decode()
    assert 'id="dashboard"' in page and 'id="study-close"' in page and 'value="5"' in page
    assert 'id="idle-people"' in page and "annotator: 2 items left" in page
    client.force_login(personas["researcher"])
    page = client.get(f"/studies/{study.slug}/").content.decode()
    assert 'id="dashboard"' not in page and 'id="release-form"' in page
    client.force_login(personas["annotator"])
    page = client.get(f"/studies/{study.slug}/").content.decode()
    assert 'id="dashboard"' not in page and 'id="release-form"' not in page
