"""The queues read a page at a time: every item once, in order, and the risk stored at submit."""

from __future__ import annotations

import random

import pytest
from django.test import Client

from annotation.models import Annotation
from annotation.rules import workflow
from annotation.selectors.queues import review_queue
from annotation.services.studies import membership_grant
from annotation.services.workflow import annotation_start_next, annotations_assign
from tests.annotation.bulkbuild import build_study
from tests.annotation.studybuild import caption_record, captions_add, complete, fake_clip

pytestmark = pytest.mark.django_db

ALL_ACCEPTED = [{"index": i, "verdict": "accept"} for i in range(3)]


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def walk(client, url: str) -> list[dict]:
    """Every item of a paged list, following `next` to the end."""
    items, cursor = [], None
    while True:
        page = client.get(url + (f"&after={cursor}" if cursor else "")).json()
        items += page["items"]
        cursor = page["next"]
        if not cursor:
            return items


@pytest.fixture
def big(study):
    built = build_study(study, clips=30, models=2, windows=2, annotators=2, reviewers=1)
    rng = random.Random(1)
    for annotation in Annotation.objects.filter(caption__clip__study=study):
        # Few distinct values, so ties on risk are broken by submission time, then id.
        Annotation.objects.filter(pk=annotation.pk).update(risk=rng.choice([0.0, 0.5, 1.5, 2.0]))
    return built


@pytest.mark.parametrize(
    ("order", "key"),
    [
        ("risk", lambda a: (-a.risk, a.submitted_at, a.pk)),
        ("oldest", lambda a: (a.submitted_at, a.pk)),
    ],
)
def test_review_queue_pages_give_every_item_once_in_order(big, order, key):
    reviewer = big.reviewers[0]
    items = walk(client_for(reviewer), f"/api/studies/s1/review-queue/?order={order}&limit=7")
    expected = sorted(Annotation.objects.filter(state=workflow.SUBMITTED), key=key)
    assert [item["id"] for item in items] == [a.pk for a in expected]


def test_review_queue_filters_before_it_pages(big):
    reviewer = big.reviewers[0]
    url = "/api/studies/s1/review-queue/?model=Model+02&limit=4"
    first = client_for(reviewer).get(url).json()
    items = walk(client_for(reviewer), url)
    assert (
        first["count"]
        == len(items)
        == Annotation.objects.filter(
            state=workflow.SUBMITTED, caption__model__alias="Model 02"
        ).count()
    )
    assert {item["model"] for item in items} == {"Model 02"}


def test_a_cursor_the_server_did_not_give_is_refused_with_a_reason(big):
    response = client_for(big.reviewers[0]).get("/api/studies/s1/review-queue/?after=garbage")
    assert response.status_code == 400 and "cursor" in response.json()["detail"]
    response = client_for(big.reviewers[0]).get("/api/studies/s1/review-queue/?limit=0")
    assert response.status_code == 400 and "limit" in response.json()["detail"]


def test_my_queue_pages_put_work_in_progress_first_then_new_then_done(study):
    built = build_study(study, clips=20, models=1, windows=2, annotators=1, submitted_share=0.5)
    person = built.annotators[0]
    opened = [annotation_start_next(study=study, annotator=person)]
    items = walk(client_for(person), "/api/studies/s1/my-queue/?limit=3")
    mine = Annotation.objects.filter(annotator=person)
    assert [item["id"] for item in items][:1] == opened
    states = [item["state"] for item in items]
    rank = {workflow.IN_PROGRESS: 0, workflow.ASSIGNED: 1, workflow.SUBMITTED: 2}
    assert states == sorted(states, key=rank.__getitem__)
    assert sorted(item["id"] for item in items) == sorted(a.pk for a in mine)
    assert {item["windows"] for item in items} == {2}


def test_my_queue_reads_the_same_items_in_the_same_order_by_pages_of_1_3_and_100(study):
    """The first page of 1 (the study page's next item) and of 100 (the queue page's) are prepared
    reads, the others and every page after a cursor are built plainly: each size walks the same
    queue, returned work and practice first."""
    from annotation.services.workflow import review_claim, review_return

    built = build_study(study, clips=12, models=1, windows=2, annotators=1, submitted_share=0.5)
    person, reviewer = built.annotators[0], built.reviewers[0]
    annotation_start_next(study=study, annotator=person)
    submitted = Annotation.objects.filter(annotator=person, state=workflow.SUBMITTED).last()
    review_claim(annotation_id=submitted.pk, actor=reviewer)
    review_return(annotation_id=submitted.pk, actor=reviewer, units=[{"unit": "overview", "comment": "Look again."}])
    practice = Annotation.objects.filter(annotator=person, state=workflow.ASSIGNED).last()
    Annotation.objects.filter(pk=practice.pk).update(purpose=Annotation.Purpose.PRACTICE)
    walks = {size: walk(client_for(person), f"/api/studies/s1/my-queue/?limit={size}") for size in (1, 3, 100)}
    assert walks[1] == walks[3] == walks[100]
    assert [item["id"] for item in walks[1][:2]] == [practice.pk, submitted.pk]
    assert walks[1][1]["return_comment"] and walks[1][1]["state"] == workflow.RETURNED
    assert len(walks[1]) == Annotation.objects.filter(annotator=person).count()


def test_the_study_page_and_the_queue_page_build_no_sql_once_each_was_served(study, monkeypatch):
    """An annotator's study page (what a crowd's participants open first) reads the study with
    the viewer's roles in one statement, then the queue's counts and next item: four statements
    with the session, none of them built again for the next participant. The queue page reads the
    same queue (its first page of 100 prepared too), whether the person withdrew or came through a
    recruitment link, and their practice: none built again either; the study's statement also
    reads whether they withdrew and their consent."""
    from django.db import connection
    from django.db.models.sql import compiler
    from django.test.utils import CaptureQueriesContext

    built = build_study(study, clips=4, models=1, windows=2, annotators=2, submitted_share=0.5)
    first, second = (client_for(person) for person in built.annotators)
    for url in ("/studies/s1/", "/studies/s1/queue/"):
        assert first.get(url).status_code == 200
    made = []
    original = compiler.SQLCompiler.as_sql
    monkeypatch.setattr(compiler.SQLCompiler, "as_sql",
                        lambda self, *a, **k: made.append(self.query.model) or original(self, *a, **k))
    with CaptureQueriesContext(connection) as captured:
        page = second.get("/studies/s1/")
    assert page.status_code == 200 and b'id="your-next"' in page.content
    assert made == [] and len(captured) == 4, [q["sql"][:80] for q in captured.captured_queries]
    with CaptureQueriesContext(connection) as captured:
        assert second.get("/studies/s1/queue/").status_code == 200
    assert made == [], made
    # The viewer's withdrawal and consent come in the statement that reads the study.
    gate = [q["sql"] for q in captured.captured_queries
            if '"annotation_withdrawal"' in q["sql"] or '"annotation_consentversion"' in q["sql"]]
    assert len(gate) == 1 and 'FROM "annotation_study"' in gate[0], gate


def test_start_next_resumes_work_in_progress_before_opening_a_new_item(study):
    built = build_study(study, clips=5, models=1, windows=2, annotators=1, submitted_share=0.0)
    person = built.annotators[0]
    first = annotation_start_next(study=study, annotator=person)
    assert annotation_start_next(study=study, annotator=person) == first
    assert Annotation.objects.filter(state=workflow.IN_PROGRESS).count() == 1


def test_start_next_opens_a_returned_item_before_work_in_progress_and_new_ones(study):
    from annotation.services.workflow import review_claim, review_return

    built = build_study(study, clips=6, models=1, windows=2, annotators=1, submitted_share=0.5)
    person, reviewer = built.annotators[0], built.reviewers[0]
    in_progress = annotation_start_next(study=study, annotator=person)
    submitted = Annotation.objects.filter(annotator=person, state=workflow.SUBMITTED).last()
    review_claim(annotation_id=submitted.pk, actor=reviewer)
    review_return(annotation_id=submitted.pk, actor=reviewer,
                  units=[{"unit": "overview", "comment": "Look again."}])
    assert annotation_start_next(study=study, annotator=person) == submitted.pk
    assert Annotation.objects.get(pk=submitted.pk).state == workflow.IN_PROGRESS
    # Then the work in progress, oldest assignment first, and only then a new item.
    first_started = min(
        Annotation.objects.filter(pk__in=[in_progress, submitted.pk]), key=lambda a: (a.assigned_at, a.pk)
    ).pk
    assert annotation_start_next(study=study, annotator=person) == first_started


def test_start_next_says_when_nothing_is_left(study, personas):
    response = client_for(personas["annotator"]).post("/api/studies/s1/my-queue/next/")
    assert response.status_code == 404


def test_review_next_claims_the_riskiest_item_that_is_not_the_reviewers_own(big):
    reviewer = big.reviewers[0]
    top = Annotation.objects.filter(state=workflow.SUBMITTED).order_by(
        "-risk", "submitted_at", "id"
    )
    expected = top.first()
    response = client_for(reviewer).post("/api/studies/s1/review-queue/next/")
    assert response.status_code == 200 and response.json()["id"] == expected.pk
    claimed = Annotation.objects.get(pk=expected.pk)
    assert claimed.reviewer_id == reviewer.pk and claimed.state == workflow.IN_REVIEW


def test_review_next_claims_with_one_update_and_records_the_claim(big):
    """The picked item is claimed by its conditional UPDATE alone (no savepoint, no second read
    of what the pick already checked), and the claim is still in the audit trail."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotation.models import AuditEvent

    reviewer = big.reviewers[0]
    client = client_for(reviewer)
    with CaptureQueriesContext(connection) as captured:
        response = client.post("/api/studies/s1/review-queue/next/")
    assert response.status_code == 200
    sql = [q["sql"] for q in captured.captured_queries]
    # One savepoint: the service's transaction, inside the test's (a nested claim made two).
    assert sum(s.startswith("SAVEPOINT") for s in sql) == 1, sql
    assert sum(s.startswith("UPDATE") for s in sql) == 1
    claim = AuditEvent.objects.get(annotation_id=response.json()["id"], action="claim")
    assert claim.actor_id == reviewer.pk and claim.after["state"] == workflow.IN_REVIEW


def test_review_next_never_gives_a_reviewer_a_caption_they_annotated(study, personas, make_user):
    second = make_user("annotator2")
    membership_grant(study=study, user=second, role="annotator")
    reviewer = personas["reviewer"]
    membership_grant(study=study, user=reviewer, role="annotator")
    fake_clip(study, "b")
    (caption,) = captions_add(study, [caption_record("b")])
    annotations_assign(study=study, annotators=[reviewer, second], overlap_share=1.0)
    complete(caption.annotations.get(annotator=second), second, active_seconds=300)
    Annotation.objects.update(undo_until=None)
    response = client_for(reviewer).post("/api/studies/s1/review-queue/next/")
    assert response.status_code == 404


def test_review_next_is_for_reviewers_only(big):
    response = client_for(big.annotators[0]).post("/api/studies/s1/review-queue/next/")
    assert response.status_code == 403


def test_risk_is_stored_at_submit_and_a_disagreeing_second_annotator_raises_both(
    study, personas, make_user
):
    second = make_user("annotator2")
    membership_grant(study=study, user=second, role="annotator")
    fake_clip(study, "b")
    (caption,) = captions_add(study, [caption_record("b")])
    first = personas["annotator"]
    annotations_assign(study=study, annotators=[first, second], overlap_share=1.0)
    fast = complete(
        caption.annotations.get(annotator=first),
        first,
        overview={"verdict": "accept"},
        windows=ALL_ACCEPTED,
        active_seconds=5,
    )
    fast.refresh_from_db()
    assert fast.risk == 1.5 and fast.risk_reasons == ["fast accept (5 s, 0% watched)"]
    complete(caption.annotations.get(annotator=second), second, active_seconds=300)
    fast.refresh_from_db()
    other = caption.annotations.get(annotator=second)
    assert fast.risk == 2.5 and "annotators disagree on the overview" in fast.risk_reasons
    assert "annotators disagree on the overview" in other.risk_reasons


def test_the_review_queue_counts_up_to_its_limit_and_says_when_there_are_more(big):
    """Counting is the one part of a review-queue page whose cost grows with the queue, so the
    count stops at a limit and says so."""
    reviewer = big.reviewers[0]
    waiting = Annotation.objects.filter(state=workflow.SUBMITTED).count()
    assert waiting > 5
    capped = review_queue(study=big.study, reviewer=reviewer, count_limit=5)
    assert (capped["count"], capped["count_capped"]) == (5, True)
    exact = review_queue(study=big.study, reviewer=reviewer, count_limit=waiting)
    assert (exact["count"], exact["count_capped"]) == (waiting, False)
    assert [i["id"] for i in capped["items"]] == [i["id"] for i in exact["items"]]
