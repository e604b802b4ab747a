"""Assigning captions under a design: kept with the study, queues in the order of the plan."""

from __future__ import annotations

from collections import defaultdict

import pytest
from rest_framework.test import APIClient

from annotation.errors import ServiceError
from annotation.models import Annotation, AuditEvent, Study
from annotation.selectors.queues import annotator_queue
from annotation.services.studies import membership_grant
from annotation.services.workflow import annotations_assign
from tests.annotation.studybuild import caption_record, captions_add, fake_clip
from tests.conftest import in_setup

pytestmark = pytest.mark.django_db

MODELS = ("Alpha", "Bravo", "Charlie")


@pytest.fixture
def crew(study, personas, make_user):
    """Four clips, three models each, and three annotators."""
    for name in ("c1", "c2", "c3", "c4"):
        fake_clip(study, name)
    captions_add(study, [caption_record(c, m) for c in ("c1", "c2", "c3", "c4") for m in MODELS])
    people = [personas["annotator"]]
    for username in ("ann2", "ann3"):
        people.append(make_user(username))
        membership_grant(study=study, user=people[-1], role="annotator")
    return people


def plan_of(study):
    rows = Annotation.objects.filter(caption__clip__study=study).order_by(
        "annotator", "queue_position"
    )
    return [
        (
            a.annotator.username,
            a.caption.clip.name,
            a.caption.model.name,
            a.queue_position,
            a.exposure,
        )
        for a in rows
    ]


def test_the_default_design_is_one_model_per_clip_with_positions_and_exposures(study, crew):
    assert study.assignment_design == "one_model_per_clip"
    report = annotations_assign(study=study, annotators=crew)
    assert (report.created, report.skipped, report.design) == (12, 0, "one_model_per_clip")
    clips = defaultdict(list)
    for username, clip, _, _position, exposure in plan_of(study):
        clips[username].append(clip)
        assert exposure == 1
    assert all(sorted(seen) == ["c1", "c2", "c3", "c4"] for seen in clips.values())


def test_the_queue_follows_the_plan_and_the_same_seed_gives_the_same_plan(
    study, other_study, crew, make_user
):
    annotations_assign(study=study, annotators=crew, seed=42)
    first = plan_of(study)
    queue = annotator_queue(study=study, annotator=crew[0])["items"]
    mine = [row for row in first if row[0] == crew[0].username]
    assert [item["clip"] for item in queue] == [clip for _, clip, *_ in mine]

    # The same clips, models and annotators (by name) in another study: the same plan.
    for name in ("c1", "c2", "c3", "c4"):
        fake_clip(other_study, name)
    captions_add(
        other_study, [caption_record(c, m) for c in ("c4", "c2", "c3", "c1") for m in MODELS]
    )
    twins = []
    for person in crew:
        twins.append(make_user(f"{person.username}-twin"))
        membership_grant(study=other_study, user=twins[-1], role="annotator")
    annotations_assign(study=other_study, annotators=twins, seed=42)
    assert [(name.removesuffix("-twin"), *rest) for name, *rest in plan_of(other_study)] == first
    annotations_assign(study=other_study, annotators=twins, seed=42)  # again: nothing new
    assert len(plan_of(other_study)) == len(first)


def test_the_design_and_spacing_chosen_when_assigning_are_kept_with_the_study(study, crew):
    with in_setup(study):
        annotations_assign(study=study, annotators=crew[:2], design="spread", gap=1)
    study = Study.objects.get(pk=study.pk)
    assert (study.assignment_design, study.spread_gap) == ("spread", 1)
    for username in (crew[0].username, crew[1].username):
        clips = [clip for person, clip, *_ in plan_of(study) if person == username]
        assert all(a != b for a, b in zip(clips, clips[1:], strict=False))
        assert max(exposure for person, *_, exposure in plan_of(study) if person == username) >= 2
    event = AuditEvent.objects.filter(action="assign").last()
    assert (event.after["design"], event.after["gap"]) == ("spread", 1)


def test_captions_the_design_cannot_place_are_counted_with_the_reason(study, crew):
    report = annotations_assign(study=study, annotators=crew[:2])
    assert (report.created, report.skipped) == (8, 4)
    (reason,) = report.reasons
    assert "at least as many annotators as captions of a clip" in reason


def test_a_spread_that_cannot_be_met_is_refused_and_nothing_is_assigned(study, crew):
    with in_setup(study), pytest.raises(ServiceError, match="cannot keep 5 items between"):
        annotations_assign(study=study, annotators=crew[:1], design="spread", gap=5)
    assert not Annotation.objects.exists()
    assert Study.objects.get(pk=study.pk).assignment_design == "one_model_per_clip"


def test_the_assignments_api_takes_the_design_and_answers_with_the_reasons(study, crew, personas):
    client = APIClient()
    client.force_authenticate(personas["admin"])
    url = f"/api/studies/{study.slug}/assignments/"
    refused = client.post(url, {"annotators": ["annotator"], "design": "by-vibes"}, format="json")
    assert refused.status_code == 400 and "design" in refused.json()
    answer = client.post(
        url, {"annotators": ["annotator", "ann2"], "design": "one_model_per_clip"}, format="json"
    ).json()
    assert (answer["created"], answer["skipped"], answer["design"]) == (8, 4, "one_model_per_clip")
    assert "one model per clip" in answer["detail"] and answer["reasons"]


def stored_annotations(study):
    """Every column of the study's annotations except ids and times, by annotator, clip and model."""
    skip = {"id", "caption_id", "annotator_id", "taxonomy_id", "assigned_at"}
    columns = [f.attname for f in Annotation._meta.concrete_fields if f.attname not in skip]
    return sorted(
        (a.annotator.username.removesuffix("-twin"), a.caption.clip.name, a.caption.model.name,
         tuple(getattr(a, c) for c in columns))
        for a in Annotation.objects.filter(caption__clip__study=study).select_related(
            "annotator", "caption__clip", "caption__model"
        )
    )


@pytest.mark.postgres
def test_copy_stores_the_same_annotations_as_bulk_create(
    study, other_study, crew, make_user, monkeypatch
):
    from annotation.services import bulk

    with in_setup(study):
        annotations_assign(study=study, annotators=crew, seed=7, overlap_share=0.5, design="spread", gap=1)
    for name in ("c1", "c2", "c3", "c4"):
        fake_clip(other_study, name)
    captions_add(other_study, [caption_record(c, m) for c in ("c1", "c2", "c3", "c4") for m in MODELS])
    twins = []
    for person in crew:
        twins.append(make_user(f"{person.username}-twin"))
        membership_grant(study=other_study, user=twins[-1], role="annotator")
    monkeypatch.setattr(bulk, "copy_supported", lambda: False)
    with in_setup(other_study):
        annotations_assign(study=other_study, annotators=twins, seed=7, overlap_share=0.5, design="spread",
                           gap=1)

    copied = stored_annotations(study)
    assert copied == stored_annotations(other_study)
    assert len(copied) == 18 and {row[3][0] for row in copied} == {"assigned"}
    # Queues read in (assigned_at, id) order follow the plan's positions.
    for person in crew:
        positions = list(
            Annotation.objects.filter(annotator=person).order_by("assigned_at", "pk").values_list(
                "queue_position", flat=True
            )
        )
        assert positions == list(range(1, len(positions) + 1))
