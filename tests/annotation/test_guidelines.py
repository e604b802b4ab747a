"""Guidelines per study through the services and the REST API: a draft replaced in setup, a new
version per edit once running (audited), the notice and its diff, the size limit at the field,
and the guideline version each verdict records."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from annotation.errors import FieldErrors
from annotation.models import Annotation, AuditEvent, CorrectionPass, GuidelineVersion
from annotation.rules import guidelines as text_rules
from annotation.services.guidelines import (
    guideline_notice_dismiss,
    guidelines_notice,
    guidelines_save,
)
from annotation.services.studies import study_create
from annotation.services.workflow import annotations_assign, review_amend, review_approve, review_claim
from tests.annotation.studybuild import caption_record, captions_add, complete, fake_clip
from tests.conftest import in_setup

pytestmark = pytest.mark.django_db

EXAMPLE = {"mode": "camera", "excerpt": "The camera pans left.", "correction": "The camera stays still.",
           "why": "A tripod shot: the frame never moves."}


def client_of(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_in_setup_an_edit_replaces_the_draft_and_each_edit_is_audited(study, personas):
    admin = personas["admin"]
    with in_setup(study):
        first, created = guidelines_save(study=study, actor=admin, text="Draft one.")
        assert created and first.number == 1
        second, created = guidelines_save(study=study, actor=admin, text="Draft two.", examples=[EXAMPLE])
        assert not created and second.pk == first.pk
    assert list(GuidelineVersion.objects.filter(study=study).values_list("number", "text")) == [(1, "Draft two.")]
    events = AuditEvent.objects.filter(study=study, action="guidelines_update").order_by("pk")
    assert [e.after["draft_replaced"] for e in events] == [False, True]
    assert events[1].before["bytes"] == len("Draft one.") and events[1].after["examples"] == 1


def test_while_running_each_edit_is_a_new_version_and_an_unchanged_save_stores_nothing(study, personas):
    admin = personas["admin"]
    guidelines_save(study=study, actor=admin, text="One.")
    version, created = guidelines_save(study=study, actor=admin, text="Two.", examples=[EXAMPLE])
    assert created and version.number == 2
    same, created = guidelines_save(study=study, actor=admin, text="Two.", examples=[EXAMPLE])
    assert not created and same.pk == version.pk
    assert GuidelineVersion.objects.filter(study=study).count() == 2
    events = list(AuditEvent.objects.filter(study=study, action="guidelines_update").order_by("pk"))
    assert len(events) == 2
    assert events[1].before["version"] == 1 and events[1].after["version"] == 2
    assert events[1].actor == admin


def test_an_oversized_guideline_or_a_bad_example_is_refused_at_its_field_and_nothing_is_stored(study, personas):
    with pytest.raises(FieldErrors) as refused:
        guidelines_save(study=study, actor=personas["admin"], text="x" * (text_rules.TEXT_MAX_BYTES + 1),
                        examples=[{"mode": "no-such-mode", "excerpt": "x"}])
    assert set(refused.value.errors) == {"text", "examples"}
    assert not GuidelineVersion.objects.exists()
    assert not AuditEvent.objects.filter(action="guidelines_update").exists()


def test_a_closed_study_refuses_new_guidelines(study, personas):
    from annotation.errors import StudyStateRefused
    from annotation.services.lifecycle import study_close

    study_close(study=study, actor=personas["admin"], confirm=True)
    with pytest.raises(StudyStateRefused):
        guidelines_save(study=study, actor=personas["admin"], text="Late.")


def test_the_notice_asks_to_read_then_shows_the_diff_of_a_newer_version_until_dismissed(study, personas):
    admin, annotator = personas["admin"], personas["annotator"]
    assert guidelines_notice(study=study, user=annotator) is None  # no guidelines yet
    guidelines_save(study=study, actor=admin, text="Reject a wrong colour.\n")
    notice = guidelines_notice(study=study, user=annotator)
    assert notice["kind"] == "new" and notice["to"] == 1
    guideline_notice_dismiss(study=study, user=annotator, version=1)
    assert guidelines_notice(study=study, user=annotator) is None
    guidelines_save(study=study, actor=admin, text="Reject a wrong colour or count.\n", examples=[EXAMPLE])
    notice = guidelines_notice(study=study, user=annotator)
    assert notice["kind"] == "updated" and (notice["from"], notice["to"]) == (1, 2)
    assert {"op": "insert", "text": " or count"} in notice["ops"]
    assert any(op["op"] == "insert" and "The camera pans left." in op["text"] for op in notice["ops"])
    assert notice["words_added"] > 2
    # Dismissing an older version does not bring back a notice already dismissed.
    assert guideline_notice_dismiss(study=study, user=annotator, version=2) == 2
    assert guideline_notice_dismiss(study=study, user=annotator, version=1) == 2
    assert guidelines_notice(study=study, user=annotator) is None


def test_whoever_writes_the_guidelines_gets_no_notice_of_them(study, personas):
    guidelines_save(study=study, actor=personas["admin"], text="Mine.")
    assert guidelines_notice(study=study, user=personas["admin"]) is None
    assert guidelines_notice(study=study, user=personas["reviewer"])["kind"] == "new"


def test_dismissing_a_version_that_does_not_exist_is_refused_at_the_field(study, personas):
    with pytest.raises(FieldErrors) as refused:
        guideline_notice_dismiss(study=study, user=personas["annotator"], version=3)
    assert "no guideline version 3" in refused.value.errors["version"]


def _world(study, personas):
    fake_clip(study, "b")
    captions_add(study, [caption_record("b", "Model-X"), caption_record("b", "Model-Y")])
    with in_setup(study):
        annotations_assign(study=study, annotators=[personas["annotator"]], design="clip_blocks")
    return list(Annotation.objects.filter(annotator=personas["annotator"]).order_by("pk"))


def test_each_verdict_records_the_guideline_version_it_was_given_under(study, personas):
    admin, annotator, reviewer = personas["admin"], personas["annotator"], personas["reviewer"]
    first, second = _world(study, personas)
    one, _ = guidelines_save(study=study, actor=admin, text="Version one.")
    complete(first, annotator)
    two, _ = guidelines_save(study=study, actor=admin, text="Version two.")
    complete(second, annotator)
    passes = CorrectionPass.objects.filter(kind="annotator")
    assert passes.get(annotation=first).guideline_version == one
    assert passes.get(annotation=second).guideline_version == two
    review_claim(annotation_id=first.pk, actor=reviewer)
    review_approve(annotation_id=first.pk, actor=reviewer)
    three, _ = guidelines_save(study=study, actor=admin, text="Version three.")
    review_claim(annotation_id=second.pk, actor=reviewer)
    review_amend(annotation_id=second.pk, actor=reviewer,
                 changes={"overview": {"verdict": "reject", "text": "A clock.", "modes": ["factual"]}})
    assert Annotation.objects.get(pk=first.pk).review_guideline_version == two
    assert Annotation.objects.get(pk=second.pk).review_guideline_version == three
    assert CorrectionPass.objects.get(annotation=second, kind="qc").guideline_version == three
    assert passes.get(annotation=second).guideline_version == two  # the annotator's stays theirs


def test_a_verdict_before_any_guidelines_records_none(study, personas):
    first, _ = _world(study, personas)
    complete(first, personas["annotator"])
    assert CorrectionPass.objects.get(annotation=first).guideline_version is None


# --------------------------------------------------------------------------- the API


def test_the_api_writes_reads_and_lists_versions_and_gives_the_diff(study, personas):
    admin = client_of(personas["admin"])
    url = f"/api/studies/{study.slug}/guidelines/"
    answer = admin.put(url, {"text": "# Rules\n\nAccept only when right.\n", "examples": [EXAMPLE]}, format="json")
    assert answer.status_code == 201, answer.content
    assert answer.json()["version"] == 1 and answer.json()["created"] is True
    assert answer.json()["examples"][0]["mode_name"]
    answer = admin.post(url, {"text": "# Rules\n\nAccept only when all is right.\n", "examples": [EXAMPLE]},
                        format="json")
    assert answer.status_code == 201 and answer.json()["version"] == 2
    body = client_of(personas["annotator"]).get(url).json()
    assert body["current"]["version"] == 2 and "<h1>Rules</h1>" in body["current"]["html"]
    assert [v["version"] for v in body["versions"]] == [1, 2]
    assert body["notice"]["kind"] == "new"
    assert body["limits"]["text_max_bytes"] == text_rules.TEXT_MAX_BYTES
    one = client_of(personas["reviewer"]).get(f"{url}1/").json()
    assert one["text"] == "# Rules\n\nAccept only when right.\n"
    diff = client_of(personas["researcher"]).get(f"{url}diff/").json()
    assert (diff["from"], diff["to"]) == (1, 2)
    assert {"op": "insert", "text": "all is "} in diff["ops"]
    assert client_of(personas["annotator"]).get(f"{url}diff/?from=0&to=1").json()["from"] is None
    assert client_of(personas["annotator"]).get(f"{url}7/").status_code == 404
    assert client_of(personas["annotator"]).get(f"{url}diff/?to=x").status_code == 400


def test_the_api_refuses_an_oversized_guideline_at_the_text_field_with_400(study, personas):
    answer = client_of(personas["admin"]).put(
        f"/api/studies/{study.slug}/guidelines/", {"text": "é" * 60_000}, format="json")
    assert answer.status_code == 400
    assert "limit is 100,000 bytes" in answer.json()["text"][0]
    assert not GuidelineVersion.objects.exists()


def test_the_api_stores_script_markup_but_answers_it_inert(study, personas):
    text = '<script>alert("x")</script>\n\n<img src=x onerror=alert(1)>\n\n[go](javascript:alert(1))'
    client_of(personas["admin"]).put(f"/api/studies/{study.slug}/guidelines/", {"text": text}, format="json")
    assert GuidelineVersion.objects.get().text == text  # stored as written
    html = client_of(personas["annotator"]).get(f"/api/studies/{study.slug}/guidelines/").json()["current"]["html"]
    assert "<script" not in html and "<img" not in html and 'href="javascript' not in html


def test_only_admins_write_guidelines(study, personas):
    for name in ("annotator", "reviewer", "researcher"):
        answer = client_of(personas[name]).put(f"/api/studies/{study.slug}/guidelines/", {"text": "x"}, format="json")
        assert answer.status_code == 403, name
    assert client_of(personas["outsider"]).get(f"/api/studies/{study.slug}/guidelines/").status_code == 404


def test_the_api_dismisses_the_notice(study, personas):
    guidelines_save(study=study, actor=personas["admin"], text="Read me.")
    annotator = client_of(personas["annotator"])
    answer = annotator.post(f"/api/studies/{study.slug}/guidelines/dismiss/", {"version": 1}, format="json")
    assert answer.status_code == 200 and answer.json() == {"version": 1}
    assert annotator.get(f"/api/studies/{study.slug}/guidelines/").json()["notice"] is None
    answer = annotator.post(f"/api/studies/{study.slug}/guidelines/dismiss/", {"version": 9}, format="json")
    assert answer.status_code == 400 and "version" in answer.json()


def test_a_new_study_in_setup_shows_no_notice(personas, make_user):
    admin = personas["admin"]
    fresh = study_create(slug="fresh", name="Fresh", created_by=admin, state="setup")
    guidelines_save(study=fresh, actor=admin, text="Draft.")
    assert guidelines_notice(study=fresh, user=admin) is None
    assert json.loads(json.dumps(client_of(admin).get("/api/studies/fresh/guidelines/").json()))["notice"] is None


def test_the_release_names_the_guideline_versions_of_each_final_verdict(study, personas):
    from scoring.release import caption_fields, release_rows

    admin, annotator, reviewer = personas["admin"], personas["annotator"], personas["reviewer"]
    first, second = _world(study, personas)
    complete(first, annotator)  # before any guidelines
    guidelines_save(study=study, actor=admin, text="Version one.")
    complete(second, annotator)
    guidelines_save(study=study, actor=admin, text="Version two.")
    for item in (first, second):
        review_claim(annotation_id=item.pk, actor=reviewer)
        review_approve(annotation_id=item.pk, actor=reviewer)
    captions, _ = release_rows(study)
    versions = {row["model"]: (row["guideline_version"], row["review_guideline_version"]) for row in captions}
    aliases = {a.caption.model.alias: a.pk for a in (first, second)}
    assert versions[next(k for k, v in aliases.items() if v == first.pk)] == (None, 2)
    assert versions[next(k for k, v in aliases.items() if v == second.pk)] == (1, 2)
    assert {"guideline_version", "review_guideline_version"} <= {name for name, _, _ in caption_fields()}


def test_the_dataset_card_names_the_guideline_versions_with_counts(study, personas, tmp_path):
    import yaml

    from scoring.release import release_build

    admin, annotator, reviewer = personas["admin"], personas["annotator"], personas["reviewer"]
    first, second = _world(study, personas)
    complete(first, annotator)  # before any guidelines
    guidelines_save(study=study, actor=admin, text="Version one.")
    complete(second, annotator)
    guidelines_save(study=study, actor=admin, text="Version two.")
    for item in (first, second):
        review_claim(annotation_id=item.pk, actor=reviewer)
        review_approve(annotation_id=item.pk, actor=reviewer)
    release_build(study=study, out_dir=tmp_path, license="CC-BY-4.0")
    card = (tmp_path / "README.md").read_text()
    header = yaml.safe_load(card.split("---\n")[1])
    # Annotated: one caption before the guidelines, one under version 1; both QC-approved under 2.
    assert header["redline"]["guideline_versions"] == {
        "annotator": [{"version": 1, "captions": 1}, {"version": None, "captions": 1}],
        "reviewer": [{"version": 2, "captions": 2}],
    }
    section = card.split("## Annotator quality")[1].split("## Failure taxonomy")[0]
    assert "### Guideline versions" in section
    saved = {v.number: v.created_at.date().isoformat() for v in GuidelineVersion.objects.filter(study=study)}
    rows = [line for line in section.splitlines() if line.startswith("| version") or line.startswith("| none")]
    assert rows == [
        f"| version 1 | {saved[1]} | 1 | 0 |",
        f"| version 2 | {saved[2]} | 0 | 2 |",
        "| none yet (before the study had guidelines) | – | 1 | 0 |",
    ]
