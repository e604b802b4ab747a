"""A study's consent through the services, the REST API and the pages: a draft replaced in
setup, a new version per edit once running (audited), refused in a closed study (the database's
own refusal is in tests/annotation/test_state_triggers.py); the text rendered safely; the gate
that keeps invited members from starting work (pages redirect, the work API answers 403 naming
the consent) until they accept the current version, asked again after a new one; and the
recruitment link's page: consent shown first, a decline that keeps nothing but a count, an
accept that records the version."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.test import APIClient

from annotation.errors import FieldErrors, StudyStateRefused
from annotation.models import Annotation, AuditEvent, ConsentRecord, ConsentVersion, Participant, RecruitmentLink
from annotation.rules import consent as consent_rules
from annotation.services import recruitment
from annotation.services.consent import (
    ConsentNeeded,
    consent_accept,
    consent_due,
    consent_save,
    work_start_require,
)
from annotation.services.lifecycle import study_close
from annotation.services.workflow import annotation_start_next, annotations_assign, review_claim
from tests.annotation.studybuild import caption_record, captions_add, complete, fake_clip
from tests.conftest import in_setup

pytestmark = pytest.mark.django_db

PID = "5f2a9c8e1b3d4a6f7e8c9d01"
PARAMS = {"PROLIFIC_PID": PID, "STUDY_ID": "60a1b2c3d4e5f6a7b8c9d0e1", "SESSION_ID": "sess1234abcd"}
TEXT = "# Taking part\n\nYou check captions. **You may stop at any time.**\n"


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def page(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def work(study, personas):
    """Study s1 running, with two clips' captions assigned to the annotator."""
    for clip in ("a", "b"):
        fake_clip(study, clip)
    captions_add(study, [caption_record(clip, "M-one") for clip in ("a", "b")])
    with in_setup(study):
        annotations_assign(study=study, annotators=[personas["annotator"]], design="clip_blocks")
    return study


# --------------------------------------------------------------------------- versions


def test_in_setup_an_edit_replaces_the_draft_and_once_running_each_edit_is_a_new_version(study, personas):
    admin = personas["admin"]
    with in_setup(study):
        first, created = consent_save(study=study, actor=admin, text="Draft one.")
        assert (first.number, created) == (1, True)
        again, created = consent_save(study=study, actor=admin, text="Draft two.")
        assert (again.pk, again.number, again.text, created) == (first.pk, 1, "Draft two.", False)
    second, created = consent_save(study=study, actor=admin, text="Version two.")
    assert (second.number, created) == (2, True)
    assert consent_save(study=study, actor=admin, text="Version two.") == (second, False)  # unchanged
    assert list(ConsentVersion.objects.filter(study=study).values_list("number", "text")) == [
        (1, "Draft two."), (2, "Version two.")]
    events = list(AuditEvent.objects.filter(action="consent_update").order_by("pk"))
    assert len(events) == 3 and events[1].after["draft_replaced"] and not events[2].after["draft_replaced"]
    assert events[2].before["version"] == 1 and events[2].after["version"] == 2
    history = page(admin).get("/studies/s1/history/").content.decode()
    assert "Rewrote the draft consent text (version 1" in history and "Wrote consent text version 2." in history
    listed = api(admin).get("/api/studies/s1/history/").json()
    assert [entry["action"] for entry in listed].count("consent_update") == 3


def test_a_closed_study_refuses_a_consent_edit_and_an_acceptance(study, personas):
    consent_save(study=study, actor=personas["admin"], text=TEXT)
    study_close(study=study, actor=personas["admin"], confirm=True)
    with pytest.raises(StudyStateRefused):
        consent_save(study=study, actor=personas["admin"], text="Late.")
    with pytest.raises(StudyStateRefused):
        consent_accept(study=study, user=personas["annotator"], version=1)
    answer = api(personas["admin"]).put("/api/studies/s1/consent/", {"text": "Late."}, format="json")
    assert answer.status_code == 409
    assert ConsentVersion.objects.get().text == TEXT and not ConsentRecord.objects.exists()


def test_an_oversized_text_is_refused_at_its_field_and_nothing_is_stored(study, personas):
    with pytest.raises(FieldErrors) as refused:
        consent_save(study=study, actor=personas["admin"], text="x" * (consent_rules.TEXT_MAX_BYTES + 1))
    assert "50,000 bytes" in refused.value.errors["text"]
    answer = api(personas["admin"]).put("/api/studies/s1/consent/",
                                        {"text": "x" * (consent_rules.TEXT_MAX_BYTES + 1)}, format="json")
    assert answer.status_code == 400 and "text" in answer.json()
    assert not ConsentVersion.objects.exists()


def test_only_study_admins_write_the_consent_and_every_member_reads_it_rendered_safely(study, personas):
    assert api(personas["annotator"]).put("/api/studies/s1/consent/", {"text": "Mine."},
                                          format="json").status_code == 403
    answer = api(personas["admin"]).put("/api/studies/s1/consent/",
                                        {"text": TEXT + "<script>alert(1)</script> [x](javascript:alert(2))"},
                                        format="json")
    assert answer.status_code == 201 and answer.json()["version"] == 1
    read = api(personas["annotator"]).get("/api/studies/s1/consent/").json()
    assert read["asked"] and read["due"] == 1 and read["mine"] is None
    assert "<strong>You may stop at any time.</strong>" in read["current"]["html"]
    assert "<script>" not in read["current"]["html"] and "href=\"javascript" not in read["current"]["html"]
    assert "&lt;script&gt;" in read["current"]["html"]


def test_a_blank_text_asks_for_no_consent(study, personas, work):
    consent_save(study=study, actor=personas["admin"], text="  \n")
    assert consent_due(study, personas["annotator"]) is None
    assert annotation_start_next(study=study, annotator=personas["annotator"]) is not None


# --------------------------------------------------------------------------- the gate for members


def test_an_annotator_starts_no_work_until_they_accept_and_the_api_names_the_consent(study, personas, work):
    annotator = personas["annotator"]
    consent_save(study=study, actor=personas["admin"], text=TEXT)
    with pytest.raises(ConsentNeeded):
        annotation_start_next(study=study, annotator=annotator)
    answer = api(annotator).post("/api/studies/s1/my-queue/next/")
    assert answer.status_code == 403
    assert "consent (version 1)" in answer.json()["detail"] and "/studies/s1/consent/" in answer.json()["detail"]
    item = Annotation.objects.filter(annotator=annotator).first()
    assert api(annotator).post(f"/api/annotations/{item.pk}/open/").status_code == 403
    assert not Annotation.objects.filter(annotator=annotator, state="in_progress").exists()
    # Accepting an older or unknown version is refused at the field; the current one is recorded.
    assert api(annotator).post("/api/studies/s1/consent/accept/", {"version": 3}, format="json").status_code == 400
    accepted = api(annotator).post("/api/studies/s1/consent/accept/", {"version": 1}, format="json")
    assert accepted.status_code == 201 and accepted.json()["version"] == 1
    assert api(annotator).post("/api/studies/s1/my-queue/next/").status_code == 200


def test_the_gate_read_with_the_membership_serves_one_check_only(study, personas, work):
    """A gate read with the study (IsStudyMemberStartingWork, for "start next") answers the first
    check of the request; the next check reads it again, so a change since is not missed."""
    from types import SimpleNamespace

    from annotation.selectors.work_gate import remember_work_gate

    annotator = personas["annotator"]
    open_gate = SimpleNamespace(withdrawn_at=None, consent_number=None, consent_text=None, consent_given=False,
                                timed_out_at=None)  # as read before the consent was written
    remember_work_gate(study, annotator, open_gate)
    consent_save(study=study, actor=personas["admin"], text=TEXT)  # after the gate was read
    work_start_require(study, annotator)  # as read: no consent asked yet
    with pytest.raises(ConsentNeeded):
        work_start_require(study, annotator)
    remember_work_gate(study, personas["admin"], open_gate)
    with pytest.raises(ConsentNeeded):  # someone else's gate is not this person's
        work_start_require(study, annotator)


def test_a_new_version_while_running_is_asked_for_before_more_work(study, personas, work):
    annotator, admin = personas["annotator"], personas["admin"]
    consent_save(study=study, actor=admin, text=TEXT)
    consent_accept(study=study, user=annotator, version=1)
    first = annotation_start_next(study=study, annotator=annotator)
    complete(Annotation.objects.get(pk=first), annotator)
    consent_save(study=study, actor=admin, text=TEXT + "\nWe now also keep your active time.\n")
    assert consent_due(study, annotator).number == 2
    with pytest.raises(ConsentNeeded):
        annotation_start_next(study=study, annotator=annotator)
    consent_accept(study=study, user=annotator, version=2)
    assert annotation_start_next(study=study, annotator=annotator) is not None
    assert list(ConsentRecord.objects.filter(user=annotator).values_list("number", flat=True)) == [1, 2]


def test_a_reviewer_claims_nothing_until_they_accept(study, personas, work):
    annotator, reviewer = personas["annotator"], personas["reviewer"]
    item = Annotation.objects.filter(annotator=annotator).first()
    complete(item, annotator)
    Annotation.objects.filter(pk=item.pk).update(undo_until=None)
    consent_save(study=study, actor=personas["admin"], text=TEXT)
    with pytest.raises(ConsentNeeded):
        review_claim(annotation_id=item.pk, actor=reviewer)
    answer = api(reviewer).post(f"/api/annotations/{item.pk}/claim/")
    assert answer.status_code == 403 and "consent" in answer.json()["detail"]
    assert api(reviewer).post("/api/studies/s1/review-queue/next/").status_code == 403
    # The review page sends them to the consent page too, and once accepted shows the item.
    assert page(reviewer).get(f"/review/{item.pk}/")["Location"].startswith("/studies/s1/consent/")
    consent_accept(study=study, user=reviewer, version=1)
    assert page(reviewer).get(f"/review/{item.pk}/").status_code == 200
    assert api(reviewer).post(f"/api/annotations/{item.pk}/claim/").status_code == 200


def test_the_queue_and_workspace_pages_send_a_member_to_the_consent_page_which_records_the_acceptance(
    study, personas, work
):
    annotator = personas["annotator"]
    consent_save(study=study, actor=personas["admin"], text=TEXT)
    client = page(annotator)
    answer = client.get("/studies/s1/queue/")
    assert answer.status_code == 302 and answer["Location"] == "/studies/s1/consent/?next=%2Fstudies%2Fs1%2Fqueue%2F"
    item = Annotation.objects.filter(annotator=annotator).first()
    assert client.get(f"/annotate/{item.pk}/")["Location"].startswith("/studies/s1/consent/")
    shown = client.get(answer["Location"])
    assert shown.status_code == 200 and b"<strong>You may stop at any time.</strong>" in shown.content
    assert b'id="consent-accept"' in shown.content
    declined = client.post("/studies/s1/consent/", {"answer": "decline", "version": "1"})
    assert b"You declined" in declined.content and not ConsentRecord.objects.exists()
    accepted = client.post("/studies/s1/consent/", {"answer": "accept", "version": "1", "next": "/studies/s1/queue/"})
    assert accepted.status_code == 302 and accepted["Location"] == "/studies/s1/queue/"
    assert client.get("/studies/s1/queue/").status_code == 200
    # An address elsewhere is not followed.
    assert client.post("/studies/s1/consent/", {"answer": "accept", "version": "1",
                                                "next": "https://evil.example/"})["Location"] == "/studies/s1/queue/"
    # A study admin who only administers is not asked.
    assert page(personas["admin"]).get("/studies/s1/review/").status_code == 200


def test_the_members_page_and_api_show_who_accepted_which_version_and_when(study, personas):
    consent_save(study=study, actor=personas["admin"], text=TEXT)
    consent_accept(study=study, user=personas["annotator"], version=1)
    rows = {row["username"]: row for row in api(personas["admin"]).get("/api/studies/s1/members/").json()}
    assert rows["annotator"]["consent_version"] == 1 and rows["annotator"]["consent_at"]
    assert rows["reviewer"]["consent_version"] is None
    shown = page(personas["admin"]).get("/studies/s1/members/")
    assert b'"consent_version": 1' in shown.content


# --------------------------------------------------------------------------- recruitment


@pytest.fixture
def link(study, personas):
    for clip in ("a", "b", "c"):
        fake_clip(study, clip)
    captions_add(study, [caption_record(clip, "M-one") for clip in ("a", "b", "c")])
    consent_save(study=study, actor=personas["admin"], text=TEXT)
    made, token = recruitment.recruitment_link_create(study=study, actor=personas["admin"], cap=2, quota=1)
    return made, f"/join/{token}/"


def counts() -> tuple[int, int, int, int]:
    return (get_user_model().objects.count(), Participant.objects.count(), ConsentRecord.objects.count(),
            AuditEvent.objects.count())


def test_the_link_shows_the_consent_first_and_a_decline_keeps_nothing_but_the_count(link):
    made, url = link
    client = Client()
    shown = client.get(url, PARAMS)
    assert shown.status_code == 200
    assert b"<strong>You may stop at any time.</strong>" in shown.content
    assert b'id="consent-decline"' in shown.content and b'id="recruitment-start"' not in shown.content
    # What the page says of the platform id is true: it is kept, encrypted, for paying them.
    assert b"platform id is kept encrypted" in shown.content and b"not stored" not in shown.content
    before = counts()
    declined = client.post(url, {**PARAMS, "answer": "decline", "consent": "1"})
    assert declined.status_code == 200 and b"Nothing was recorded about you" in declined.content
    assert counts() == before
    assert RecruitmentLink.objects.get(pk=made.pk).declines == 1
    assert "_auth_user_id" not in client.session
    assert PID.encode() not in b"".join(str(e.after).encode() for e in AuditEvent.objects.all())
    # The admin sees the count with the link.
    admin = api(made.created_by).get("/api/studies/s1/recruitment-links/").json()
    assert admin[0]["declines"] == 1


def test_accepting_starts_and_records_the_version_and_a_start_without_it_is_refused(link):
    made, url = link
    client = Client()
    before = counts()
    refused = client.post(url, PARAMS)  # the plain start of a page without consent
    assert refused.status_code == 409 and b"consent" in refused.content and b'id="consent-text"' in refused.content
    assert counts() == before
    with pytest.raises(recruitment.RecruitmentRefused):
        recruitment.participant_join(link=made, params=PARAMS)
    assert counts() == before
    accepted = client.post(url, {**PARAMS, "answer": "accept", "consent": "1"})
    assert accepted.status_code == 302 and accepted["Location"] == "/studies/s1/queue/"
    participant = Participant.objects.get()
    record = ConsentRecord.objects.get()
    assert (record.user, record.number, record.study_id) == (participant.user, 1, made.study_id)
    assert client.get("/studies/s1/queue/").status_code == 200  # not asked again
    # Coming back with the current version accepted: not asked again.
    again = Client().get(url, PARAMS)
    assert b"Welcome back" in again.content and b'id="consent-text"' not in again.content


def test_a_text_changed_since_it_was_shown_is_shown_again_and_a_returning_participant_accepts_the_new_one(
    link, personas
):
    made, url = link
    client = Client()
    consent_save(study=made.study, actor=personas["admin"], text=TEXT + "\nVersion two.\n")
    stale = client.post(url, {**PARAMS, "answer": "accept", "consent": "1"})
    assert stale.status_code == 409 and b"Version two." in stale.content and b'value="2"' in stale.content
    assert not Participant.objects.exists()
    client.post(url, {**PARAMS, "answer": "accept", "consent": "2"})
    participant = Participant.objects.get()
    consent_save(study=made.study, actor=personas["admin"], text=TEXT + "\nVersion three.\n")
    back = Client()
    shown = back.get(url, PARAMS)
    assert b"Version three." in shown.content and b'id="consent-accept"' in shown.content
    back.post(url, {**PARAMS, "answer": "accept", "consent": "3"})
    assert list(ConsentRecord.objects.filter(user=participant.user).values_list("number", flat=True)) == [2, 3]


def test_a_decline_from_a_page_whose_consent_was_withdrawn_starts_nothing(link, personas):
    made, url = link
    consent_save(study=made.study, actor=personas["admin"], text="")
    before = counts()
    declined = Client().post(url, {**PARAMS, "answer": "decline", "consent": "1"})
    assert declined.status_code == 200 and b"You declined" in declined.content
    assert counts() == before and RecruitmentLink.objects.get(pk=made.pk).declines == 0
