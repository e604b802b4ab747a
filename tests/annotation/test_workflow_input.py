"""Malformed input to the workflow API: a 4xx naming the field, never a 500, nothing written."""

import pytest
from rest_framework.test import APIClient

from annotation.models import Annotation, AuditEvent
from annotation.services.workflow import annotation_save
from tests.annotation.test_workflow import REJECTED_OVERVIEW, complete
from tests.conftest import in_setup

pytestmark = pytest.mark.django_db


def client_for(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


def draft(annotation, user, changes, base_version=None):
    return client_for(user).patch(f"/api/annotations/{annotation.pk}/draft/", {
        "base_version": base_version or annotation.version, "changes": changes,
    }, format="json")


def test_a_non_numeric_watched_share_is_refused_naming_the_field(annotation, personas):
    bad = {"telemetry": {"watched_share": "all of it"}}
    response = draft(annotation, personas["annotator"], bad)
    assert response.status_code == 400
    assert "watched_share" in response.content.decode()
    stored = Annotation.objects.get(pk=annotation.pk)
    assert stored.telemetry == {} and stored.version == annotation.version


def test_a_watched_share_outside_zero_to_one_is_refused(annotation, personas):
    response = draft(annotation, personas["annotator"], {"telemetry": {"watched_share": 7}})
    assert response.status_code == 400 and "watched_share" in response.content.decode()


def test_the_review_queue_survives_a_bad_watched_share_already_stored(annotation, personas):
    """Values stored before saves were validated (or written around them) must not stop QC."""
    annotation = annotation_save(annotation_id=annotation.pk, actor=personas["annotator"],
                                 base_version=annotation.version, changes={"active_seconds": 3})
    complete(annotation, personas["annotator"])
    for bad in ("all of it", [1, 2], {"a": 1}, "nan", "inf", 10**400):
        Annotation.objects.filter(pk=annotation.pk).update(telemetry={"watched_share": bad})
        response = client_for(personas["reviewer"]).get("/api/studies/s1/review-queue/")
        assert response.status_code == 200, bad
        assert [item["id"] for item in response.json()["items"]] == [annotation.pk]


def test_a_refused_save_writes_nothing_to_the_audit_trail(annotation, personas):
    before = AuditEvent.objects.count()
    response = draft(annotation, personas["annotator"], {
        "overview": {"verdict": "reject", "text": "A new overview."},
        "telemetry": {"watched_share": "x"},
    })
    assert response.status_code == 400
    assert AuditEvent.objects.count() == before
    assert Annotation.objects.get(pk=annotation.pk).version == annotation.version


def test_the_save_service_refuses_a_non_numeric_watched_share(annotation, personas):
    from annotation.errors import ServiceError

    with pytest.raises(ServiceError, match="watched_share"):
        annotation_save(annotation_id=annotation.pk, actor=personas["annotator"],
                        base_version=annotation.version,
                        changes={"telemetry": {"watched_share": "1"}})
    assert Annotation.objects.get(pk=annotation.pk).version == annotation.version


# --------------------------------------------------------------------------- wrong shapes



@pytest.fixture
def window_pass(annotation, personas):
    """The annotation with its overview locked: the window pass is open."""
    from annotation.services.workflow import overview_lock

    annotation = annotation_save(annotation_id=annotation.pk, actor=personas["annotator"],
                                 base_version=annotation.version,
                                 changes={"overview": REJECTED_OVERVIEW})
    return overview_lock(annotation_id=annotation.pk, actor=personas["annotator"],
                         base_version=annotation.version)


def stored_state(annotation):
    """Everything a save could change: the annotation row, its passes, its audit trail."""
    from annotation.services.workflow import annotation_snapshot

    fresh = Annotation.objects.get(pk=annotation.pk)
    return annotation_snapshot(fresh), AuditEvent.objects.count()


WRONG_DRAFTS = [
    # (what the client sent in `changes`, a word the answer must name)
    ({"overview": "A new overview"}, "overview"),
    ({"overview": ["reject"]}, "overview"),
    ({"overview": {"verdict": "reject", "modes": [1, 2]}}, "modes"),
    ({"overview": {"modes": "factual"}}, "modes"),
    ({"overview": {"text": 42}}, "text"),
    ({"overview": {"verdict": ["reject"]}}, "verdict"),
    ({"overview": {"text": "x" * 50_001}}, "text"),
    ({"windows": {"index": 0}}, "windows"),
    ({"windows": ["accept"]}, "windows"),
    ({"windows": [{"index": 0, "start": "soon"}]}, "start"),
    ({"windows": [{"index": 0, "start": None}]}, "start"),
    ({"windows": [{"index": "0", "verdict": "accept"}, {"index": [1]}]}, "index"),
    ({"windows": [{"index": 1, "scene": {"text": "x"}}]}, "scene"),
    ({"windows": [{"index": 1, "shot": "x" * 5_001}]}, "shot"),
    ({"windows": [{"index": 0, "modes": [None]}]}, "modes"),
    ({"segmentation": "reject"}, "segmentation"),
    ({"segmentation": {"windows": "0-2,2-6"}}, "windows"),
    ({"segmentation": {"windows": [{"start": 0, "end": None}]}}, "end"),
    ({"ui_state": ["unit", 2]}, "ui_state"),
    ({"ui_state": {"note": "x" * 20_000}}, "ui_state"),
    ({"telemetry": "watched"}, "telemetry"),
    ({"telemetry": {"watched": [[0, "a"]]}}, "watched"),
    ({"active_seconds": "a while"}, "active_seconds"),
    ({"active_seconds": -5}, "active_seconds"),
]


@pytest.mark.parametrize(("changes", "field"), WRONG_DRAFTS)
def test_a_draft_of_the_wrong_shape_is_refused_naming_the_field(window_pass, personas,
                                                                changes, field):
    before = stored_state(window_pass)
    response = draft(window_pass, personas["annotator"], changes)
    assert response.status_code == 400, response.content[:300]
    assert field in response.json()["detail"]
    assert stored_state(window_pass) == before


@pytest.mark.parametrize("body", [[], "changes", {"changes": []}, {"base_version": 1}])
def test_a_draft_body_that_is_not_an_object_of_changes_is_refused(annotation, personas, body):
    response = client_for(personas["annotator"]).patch(
        f"/api/annotations/{annotation.pk}/draft/", body, format="json")
    assert response.status_code == 400 and response.json()["detail"]


def raw_draft(annotation, user, body: bytes, content_type="application/json"):
    return client_for(user).generic("PATCH", f"/api/annotations/{annotation.pk}/draft/", body,
                                    content_type=content_type)


@pytest.mark.parametrize(("body", "words"), [
    (b'{"base_version": 2, "changes": {"ui_state": ' + b"[" * 50_000 + b"]" * 50_000 + b"}}",
     "nested"),
    (b'{"base_version": 2, "changes": {"ui_state": {"a": ' + b"[" * 40 + b"]" * 40 + b"}}}",
     "changes.ui_state.a"),
    (b'{"base_version": ' + b"1" * 5_000 + b', "changes": {}}', "base_version"),
    (b'{"base_version": 2, "changes": {"active_seconds": ' + b"7" * 4_000 + b"}}",
     "changes.active_seconds"),
    (b'{"base_version": 2, "changes": {"ui_state": {"time": 1e5000}}}', "changes.ui_state.time"),
    (b'{"base_version": 2, "changes": {"ui_state": {"time": NaN}}}', "changes.ui_state.time"),
    (b'{"base_version": 2, "changes": {"ui_state": {"note": "a\\u0000b"}}}',
     "changes.ui_state.note"),
    (b'{"base_version": 2, "changes": {"ui_state": {"a\\u0000": 1}}}', "changes.ui_state"),
    (b'{"base_version": 2, "changes": {"ui_state": {"note": "\\ud800"}}}', "surrogate"),
    (b'{"base_version": 2, "changes": {"overview": {"text": "\xff\xfe"}}}', "utf-8"),
])
def test_json_no_database_can_store_is_refused_saying_where(annotation, personas, body, words):
    before = stored_state(annotation)
    response = raw_draft(annotation, personas["annotator"], body)
    assert response.status_code == 400
    assert words in response.json()["detail"]
    assert stored_state(annotation) == before


def test_nul_in_any_draft_text_is_refused_naming_the_field(window_pass, personas):
    for changes, field in [
        ({"overview": {"text": "a\x00b"}}, "text"),
        ({"windows": [{"index": 1, "scene": "a\x00b"}]}, "scene"),
        ({"overview": {"modes": ["fact\x00ual"]}}, "modes"),
        ({"segmentation": {"windows": [{"start": 0, "end": 2, "shot": "\x00"}]}}, "shot"),
    ]:
        before = stored_state(window_pass)
        response = draft(window_pass, personas["annotator"], changes)
        assert response.status_code == 400 and field in response.json()["detail"]
        assert stored_state(window_pass) == before


def test_the_workspace_can_still_save_everything_it_sends(window_pass, personas):
    """The shapes the workspace sends pass: the checks refuse only what it never sends."""
    response = draft(window_pass, personas["annotator"], {
        "windows": [{"index": 1, "verdict": "reject", "scene": "The counter runs.", "shot": "",
                     "start": 2, "end": 3.5, "modes": ["temporal"]}],
        "segmentation": {"verdict": "reject", "modes": ["segmentation"],
                         "windows": [{"start": 0, "end": 3, "scene": "", "shot": ""},
                                     {"start": 3, "end": 6}]},
        "ui_state": {"unit": 2, "seg_row": 0, "time": 1.5, "rate": 1, "loop": False,
                     "focus": {"id": "scene-1", "at": 3}},
        "telemetry": {"watched_share": 0.5, "watched": [[0, 3]], "seeks": 1,
                      "speeds": {"1": 3.0}},
        "active_seconds": 4.2,
    })
    assert response.status_code == 200, response.content
    data = response.json()
    assert data["annotator_pass"]["windows"][0]["start"] == 2
    assert data["annotator_pass"]["segmentation"]["windows"][1]["end"] == 6
    assert data["telemetry"]["watched_share"] == 0.5 and data["ui_state"]["focus"]["at"] == 3


# --------------------------------------------------------------------------- QC


@pytest.fixture
def claimed(annotation, personas):
    """The annotation submitted and claimed by the reviewer."""
    from annotation.services.workflow import review_claim

    complete(annotation, personas["annotator"])
    return review_claim(annotation_id=annotation.pk, actor=personas["reviewer"])


@pytest.mark.parametrize(("changes", "field"), [
    ({"overview": "Better"}, "overview"),
    ({"overview": ["x"]}, "overview"),
    ({"overview": {"verdict": "reject", "text": "Better.", "modes": [3]}}, "modes"),
    ({"windows": [{"index": 0, "start": None}]}, "start"),
    ({"windows": [{"index": 0, "end": "late"}]}, "end"),
    ({"segmentation": "accept"}, "segmentation"),
    ({"overview": {"text": "a\x00b"}}, "text"),
    ({"overview": {"text": "x" * 50_001}}, "text"),
])
def test_an_amendment_of_the_wrong_shape_is_refused_and_changes_nothing(claimed, personas,
                                                                       changes, field):
    before = stored_state(claimed)
    response = client_for(personas["reviewer"]).post(
        f"/api/annotations/{claimed.pk}/amend/", {"changes": changes}, format="json")
    assert response.status_code == 400 and field in response.json()["detail"]
    assert stored_state(claimed) == before


@pytest.mark.parametrize(("body", "words"), [
    ({"units": [{"unit": "overview", "comment": "Fix."}], "comment": "fix\x00it"}, "comment"),
    ({"units": [{"unit": "overview", "comment": "Fix."}], "comment": ["fix"]}, "comment"),
    ({"units": [{"unit": "overview", "comment": "Fix."}], "comment": "x" * 5_001}, "comment"),
    ({"units": [{"unit": "overview", "comment": "x" * 5_001}]}, "units[0].comment"),
    ({"units": [{"unit": "overview", "comment": "a\x00"}]}, "units[0].comment"),
    ({"units": [{"unit": ["overview"], "comment": "Fix."}]}, "units[0].unit"),
    ({"units": "overview"}, "units"),
    ({"units": ["overview"]}, "units[0]"),
])
def test_a_bad_return_is_refused_naming_the_field(claimed, personas, body, words):
    before = stored_state(claimed)
    response = client_for(personas["reviewer"]).post(
        f"/api/annotations/{claimed.pk}/return/", body, format="json")
    assert response.status_code == 400 and words in response.json()["detail"]
    assert stored_state(claimed) == before


@pytest.mark.parametrize(("who", "path", "body"), [
    ("reviewer", "return/", b"comment=\xff\xfe%ff"),
    ("annotator", "submit/", b"base_version=\xff"),
    ("annotator", "/api/edit-size/", b"study=s1&original=\xff&corrected=%fe"),
    ("admin", "/api/studies/s1/assignments/", b"annotators=\xff"),
    ("admin", "/login/", b"username=\xff&password=\xfe"),
])
def test_a_form_post_with_invalid_utf8_is_read_or_refused_never_a_server_error(
        claimed, personas, who, path, body):
    client = client_for(personas[who])
    client.raise_request_exception = False
    url = path if path.startswith("/") else f"/api/annotations/{claimed.pk}/{path}"
    response = client.generic("POST", url, body, content_type="application/x-www-form-urlencoded")
    assert response.status_code < 500


# --------------------------------------------------------------------------- bounded work


def test_edit_size_is_for_members_of_the_study_named(personas, make_user):
    body = {"study": "s1", "original": "a red car", "corrected": "a blue car"}
    assert client_for(personas["reviewer"]).post("/api/edit-size/", body,
                                                 format="json").status_code == 200
    assert client_for(personas["outsider"]).post("/api/edit-size/", body,
                                                 format="json").status_code == 404
    nowhere = {**body, "study": "no-such-study"}
    assert client_for(personas["reviewer"]).post("/api/edit-size/", nowhere,
                                                 format="json").status_code == 404
    unnamed = client_for(personas["reviewer"]).post("/api/edit-size/", {
        "original": "a", "corrected": "b"}, format="json")
    assert unnamed.status_code == 400 and "study" in unnamed.json()["detail"]


def test_edit_size_uses_the_studys_near_total_cut_unless_told(personas, study):
    with in_setup(study):
        study.near_total_cut = 0.01
        study.save()
    body = {"study": "s1", "original": "a red car", "corrected": "the blue truck"}
    client = client_for(personas["reviewer"])
    assert client.post("/api/edit-size/", body, format="json").json()["near_total"] is False
    told = client.post("/api/edit-size/", {**body, "near_total_cut": 0.99}, format="json")
    assert told.json()["near_total"] is True


@pytest.mark.parametrize("field", ["original", "corrected"])
def test_edit_size_refuses_texts_longer_than_an_overview_may_be(personas, field):
    from annotation.interchange.formats import MAX_OVERVIEW_CHARS

    body = {"study": "s1", "original": "a", "corrected": "b", field: "x " * MAX_OVERVIEW_CHARS}
    response = client_for(personas["reviewer"]).post("/api/edit-size/", body, format="json")
    assert response.status_code == 400 and field in response.json()["detail"]
    assert "50000" in response.json()["detail"]


def test_a_save_audits_only_what_changed_not_the_whole_pass_twice(annotation, personas):
    import json

    from annotation.rules.audit_diff import apply_text_patch

    long_text = "The counter counts up. " * 2_000  # 46,000 characters, under the limit
    first = draft(annotation, personas["annotator"], {
        "overview": {"verdict": "reject", "text": long_text}}).json()
    second = draft(annotation, personas["annotator"], {
        "overview": {"text": long_text + "Then it stops."}}, base_version=first["version"])
    assert second.status_code == 200
    saves = list(AuditEvent.objects.filter(annotation=annotation, action="save").order_by("pk"))
    sizes = [len(json.dumps([event.before, event.after])) for event in saves]
    assert sizes[0] < len(long_text) * 1.1 and sizes[1] < 500
    text = ""
    for event in saves:
        text = apply_text_patch(text, event.after["overview.text"])
    assert text == long_text + "Then it stops."
