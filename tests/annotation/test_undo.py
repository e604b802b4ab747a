"""Undo of decisive actions: locking the overview, submitting to QC, approving, amending.

Each can be taken back by whoever took it for settings.UNDO_SECONDS; meanwhile others do
not see it (a submission stays out of the review queue), afterwards it stands, and the
database trigger refuses the move back even to code that skips the service.
"""

from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.models import Annotation, AuditEvent, CorrectionPass, WindowCorrection
from annotation.selectors.queues import review_queue
from annotation.services.workflow import (
    Conflict,
    NotAllowed,
    decision_undo,
    final_pass,
    overview_lock,
    review_amend,
    review_approve,
    review_claim,
    review_claim_next,
)
from tests.annotation.test_workflow import REJECTED_OVERVIEW, complete, save

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def undo_window(settings):
    settings.UNDO_SECONDS = 10


def close_window(annotation):
    """Move the undo window into the past, as if its seconds had gone by."""
    Annotation.objects.filter(pk=annotation.pk).update(undo_until=timezone.now() - timedelta(seconds=1))


def undo_events(annotation):
    return list(AuditEvent.objects.filter(annotation=annotation, action="undo").values_list("before", "after"))


def test_undoing_the_overview_lock_reopens_the_overview_and_is_audited(annotation, personas):
    annotator = personas["annotator"]
    annotation = save(annotation, annotator, overview=REJECTED_OVERVIEW)
    annotation = overview_lock(annotation_id=annotation.pk, actor=annotator, base_version=annotation.version)
    assert annotation.overview_locked_at is not None
    undone = decision_undo(annotation_id=annotation.pk, actor=annotator)
    assert undone.overview_locked_at is None and undone.state == "in_progress"
    assert undone.version == annotation.version + 1
    assert undo_events(annotation) == [
        ({"state": "in_progress", "action": "lock_overview"}, {"state": "in_progress", "undone": "lock_overview"})
    ]
    # The overview can be changed again, and there is nothing left to undo.
    save(undone, annotator, overview={"verdict": "accept"})
    with pytest.raises(Conflict, match="nothing to undo"):
        decision_undo(annotation_id=annotation.pk, actor=annotator)


def test_a_submission_stays_out_of_review_until_its_window_passes_and_can_be_undone(annotation, personas, study):
    annotator, reviewer = personas["annotator"], personas["reviewer"]
    annotation = complete(annotation, annotator)
    assert annotation.state == "submitted" and annotation.undo_until is not None
    # Others do not see it yet: not in the queue, not claimable by pressing next or by id.
    assert review_queue(study=study, reviewer=reviewer)["count"] == 0
    assert review_claim_next(study=study, actor=reviewer) is None
    with pytest.raises(Conflict, match="may still be undone"):
        review_claim(annotation_id=annotation.pk, actor=reviewer)
    undone = decision_undo(annotation_id=annotation.pk, actor=annotator)
    assert undone.state == "in_progress" and undone.submitted_at is None
    assert undo_events(annotation)[0][1] == {"state": "in_progress", "undone": "submit"}
    assert review_queue(study=study, reviewer=reviewer)["count"] == 0


def test_a_submission_reaches_review_when_the_window_passes_and_then_stands(annotation, personas, study):
    annotator, reviewer = personas["annotator"], personas["reviewer"]
    annotation = complete(annotation, annotator)
    close_window(annotation)
    assert review_queue(study=study, reviewer=reviewer)["count"] == 1
    with pytest.raises(Conflict, match="have passed"):
        decision_undo(annotation_id=annotation.pk, actor=annotator)
    annotation.refresh_from_db()
    assert annotation.state == "submitted"
    assert not undo_events(annotation)
    assert review_claim_next(study=study, actor=reviewer) == annotation.pk


def test_nobody_else_may_undo(annotation, personas):
    annotation = complete(annotation, personas["annotator"])
    for other in (personas["reviewer"], personas["admin"]):
        with pytest.raises(NotAllowed, match="Only the person who took this decision"):
            decision_undo(annotation_id=annotation.pk, actor=other)
    annotation.refresh_from_db()
    assert annotation.state == "submitted"


def test_undoing_an_approval_gives_the_reviewer_back_the_claim(annotation, personas):
    annotator, reviewer = personas["annotator"], personas["reviewer"]
    annotation = complete(annotation, annotator)
    close_window(annotation)
    review_claim(annotation_id=annotation.pk, actor=reviewer)
    annotation = review_approve(annotation_id=annotation.pk, actor=reviewer)
    assert annotation.state == "approved"
    with pytest.raises(NotAllowed):
        decision_undo(annotation_id=annotation.pk, actor=annotator)
    undone = decision_undo(annotation_id=annotation.pk, actor=reviewer)
    assert undone.state == "in_review" and undone.reviewer_id == reviewer.pk
    assert undone.reviewed_at is None and undone.claim_expires_at > timezone.now()
    assert undo_events(annotation) == [({"state": "approved", "action": "approve"},
                                        {"state": "in_review", "undone": "approve"})]
    # Approved again, past its window, it is final.
    approved = review_approve(annotation_id=annotation.pk, actor=reviewer)
    close_window(approved)
    with pytest.raises(Conflict, match="have passed"):
        decision_undo(annotation_id=annotation.pk, actor=reviewer)


AMENDMENT = {
    "overview": {"verdict": "reject", "text": "A test card; a counter counts to five.", "modes": ["omission"]},
    "windows": [{"index": 0, "verdict": "reject", "scene": "Bars.", "shot": "Static frame.", "start": 0, "end": 2,
                 "modes": ["factual"]}],
}


def amended(annotation, personas):
    annotation = complete(annotation, personas["annotator"])
    close_window(annotation)
    review_claim(annotation_id=annotation.pk, actor=personas["reviewer"])
    return review_amend(annotation_id=annotation.pk, actor=personas["reviewer"], changes=AMENDMENT)


def test_undoing_an_amendment_removes_the_qc_pass_and_gives_the_reviewer_back_the_claim(annotation, personas):
    reviewer = personas["reviewer"]
    annotation = amended(annotation, personas)
    assert annotation.state == "approved" and final_pass(annotation).kind == "qc"
    assert annotation.undo["action"] == "amend"
    with pytest.raises(NotAllowed):
        decision_undo(annotation_id=annotation.pk, actor=personas["annotator"])
    undone = decision_undo(annotation_id=annotation.pk, actor=reviewer)
    assert undone.state == "in_review" and undone.reviewer_id == reviewer.pk
    assert undone.reviewed_at is None and undone.claim_expires_at > timezone.now()
    # Exactly as before the amendment: the annotator's pass only, nothing of QC's left.
    assert [p.kind for p in undone.passes.all()] == ["annotator"]
    assert not WindowCorrection.objects.filter(correction_pass__kind="qc").exists()
    assert undo_events(annotation) == [({"state": "approved", "action": "amend"},
                                        {"state": "in_review", "undone": "amend"})]
    # The audit trail keeps what the amendment was.
    event = AuditEvent.objects.get(annotation=annotation, action="amend")
    assert event.after["overview"]["text"] == AMENDMENT["overview"]["text"]
    # Approving plainly now makes the annotator's pass final, not the removed amendment.
    approved = review_approve(annotation_id=annotation.pk, actor=reviewer)
    assert final_pass(approved).kind == "annotator"


def test_an_amendment_undone_can_be_amended_again_from_the_annotators_pass(annotation, personas):
    reviewer = personas["reviewer"]
    annotation = amended(annotation, personas)
    decision_undo(annotation_id=annotation.pk, actor=reviewer)
    again = review_amend(annotation_id=annotation.pk, actor=reviewer, changes={
        "overview": {"verdict": "reject", "text": "Another amendment.", "modes": ["factual"]},
    })
    qc = again.passes.get(kind="qc")
    assert qc.overview_text == "Another amendment."
    # Window 1 is the annotator's again (the first amendment's window is gone with its pass).
    assert qc.windows.get(window__index=0).verdict == "accept"
    close_window(again)
    with pytest.raises(Conflict, match="have passed"):
        decision_undo(annotation_id=annotation.pk, actor=reviewer)
    assert again.passes.filter(kind="qc").exists()


def test_the_database_keeps_a_qc_pass_unless_its_amendment_is_being_undone(annotation, personas):
    annotation = amended(annotation, personas)
    close_window(annotation)
    qc = CorrectionPass.objects.filter(annotation=annotation, kind="qc")
    with pytest.raises(IntegrityError), transaction.atomic():
        qc.delete()
    with pytest.raises(IntegrityError), transaction.atomic():
        CorrectionPass.objects.filter(annotation=annotation, kind="annotator").delete()
    with pytest.raises(IntegrityError), transaction.atomic():
        Annotation.objects.filter(pk=annotation.pk).update(state="in_review")
    # With the amendment's window open, its QC pass may go (and the annotator's still not).
    Annotation.objects.filter(pk=annotation.pk).update(undo_until=timezone.now() + timedelta(seconds=30))
    with pytest.raises(IntegrityError), transaction.atomic():
        CorrectionPass.objects.filter(annotation=annotation, kind="annotator").delete()
    qc.delete()
    assert not qc.exists()


@pytest.mark.parametrize("action", ["submit", "approve", "amend"])
def test_the_database_refuses_the_move_back_once_the_window_passed(annotation, personas, action):
    annotation = complete(annotation, personas["annotator"])
    back = "in_progress"
    if action == "approve":
        close_window(annotation)
        review_claim(annotation_id=annotation.pk, actor=personas["reviewer"])
        annotation = review_approve(annotation_id=annotation.pk, actor=personas["reviewer"])
        back = "in_review"
    if action == "amend":
        close_window(annotation)
        review_claim(annotation_id=annotation.pk, actor=personas["reviewer"])
        annotation = review_amend(annotation_id=annotation.pk, actor=personas["reviewer"], changes=AMENDMENT)
        back = "in_review"
    close_window(annotation)
    with pytest.raises(IntegrityError), transaction.atomic():
        Annotation.objects.filter(pk=annotation.pk).update(state=back)
    # Within the window the same move is allowed (the service is one way to make it).
    Annotation.objects.filter(pk=annotation.pk).update(undo_until=timezone.now() + timedelta(seconds=30))
    Annotation.objects.filter(pk=annotation.pk).update(state=back)


def test_the_api_offers_the_undo_to_who_acted_and_answers_others_with_403(annotation, personas):
    from rest_framework.test import APIClient

    def client_for(user):
        client = APIClient()
        client.force_authenticate(user)
        return client

    annotator, reviewer = client_for(personas["annotator"]), client_for(personas["reviewer"])
    annotation = complete(annotation, personas["annotator"])
    url = f"/api/annotations/{annotation.pk}/"
    offered = annotator.get(url).json()
    assert offered["undo_seconds"] == 10
    assert offered["undo"]["action"] == "submit" and 0 < offered["undo"]["seconds_left"] <= 10
    assert reviewer.get(url).json()["undo"] is None  # not theirs to undo
    refused = reviewer.post(f"{url}undo/")
    assert refused.status_code == 403 and "Only the person" in refused.json()["detail"]
    assert client_for(personas["researcher"]).post(f"{url}undo/").status_code == 403
    assert client_for(personas["outsider"]).post(f"{url}undo/").status_code == 404
    answer = annotator.post(f"{url}undo/")
    assert answer.status_code == 200 and answer.json()["state"] == "in_progress"
    again = annotator.post(f"{url}undo/")
    assert again.status_code == 409 and "nothing to undo" in again.json()["detail"]


def test_the_api_undoes_an_amendment_for_the_reviewer_who_made_it(annotation, personas):
    from rest_framework.test import APIClient

    annotation = complete(annotation, personas["annotator"])
    close_window(annotation)
    reviewer = APIClient()
    reviewer.force_authenticate(personas["reviewer"])
    url = f"/api/annotations/{annotation.pk}/"
    assert reviewer.post(f"{url}claim/").status_code == 200
    answer = reviewer.post(f"{url}amend/", {"changes": AMENDMENT}, format="json")
    assert answer.status_code == 200, answer.json()
    assert answer.json()["undo"]["action"] == "amend"
    assert answer.json()["qc_pass"]["overview"]["text"] == AMENDMENT["overview"]["text"]
    annotator = APIClient()
    annotator.force_authenticate(personas["annotator"])
    assert annotator.post(f"{url}undo/").status_code == 403
    undone = reviewer.post(f"{url}undo/")
    assert undone.status_code == 200
    body = undone.json()
    assert body["state"] == "in_review" and body["reviewer"] == "reviewer"
    assert not body["qc_pass"] and body["undo"] is None
    again = reviewer.post(f"{url}undo/")
    assert again.status_code == 409 and "nothing to undo" in again.json()["detail"]


@pytest.mark.parametrize("action", ["submit", "approve", "amend"])
def test_an_undo_at_the_edge_of_its_window_is_refused_as_passed_when_the_database_says_so(
    annotation, personas, action, monkeypatch
):
    """The soak's finding: the service checks the window with this process's clock, the trigger
    with the database's, a little later; the trigger's refusal was an HTML 500. Here the window
    has passed in the database's clock and not yet in the service's."""
    from types import SimpleNamespace

    from rest_framework.test import APIClient

    import annotation.services.review as review

    annotation = complete(annotation, personas["annotator"])
    actor = personas["annotator"]
    if action in ("approve", "amend"):
        close_window(annotation)
        review_claim(annotation_id=annotation.pk, actor=personas["reviewer"])
        if action == "approve":
            review_approve(annotation_id=annotation.pk, actor=personas["reviewer"])
        else:
            review_amend(annotation_id=annotation.pk, actor=personas["reviewer"], changes=AMENDMENT)
        actor = personas["reviewer"]
    close_window(annotation)  # a second ago, in either clock
    before = Annotation.objects.get(pk=annotation.pk)
    lagging = SimpleNamespace(now=lambda: timezone.now() - timedelta(seconds=5))
    monkeypatch.setattr(review, "timezone", lagging)
    client = APIClient()
    client.force_authenticate(actor)
    answer = client.post(f"/api/annotations/{annotation.pk}/undo/")
    assert answer.status_code == 409, answer.content
    assert "seconds to undo" in answer.json()["detail"] and "passed" in answer.json()["detail"]
    after = Annotation.objects.get(pk=annotation.pk)
    assert (after.state, after.version, after.undo_until) == (before.state, before.version, before.undo_until)
    assert undo_events(annotation) == []
