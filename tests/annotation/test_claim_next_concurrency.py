"""Fifty people pressing "next" at the same moment, on PostgreSQL, each on their own connection.

Real threads, each with its own database connection, released together by a barrier.
SELECT ... FOR UPDATE SKIP LOCKED must give each press a different item, and a press must
never wait for another press's transaction: the second test holds one claim open and shows
that the next press, with a lock timeout, takes the following item instead of waiting.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from annotation.models import Annotation, AuditEvent
from annotation.rules import workflow
from annotation.services.studies import study_create
from annotation.services.workflow import annotation_start_next, review_claim_next
from tests.annotation.bulkbuild import build_study

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

PRESSES = 50


@pytest.fixture(autouse=True)
def no_scoring_on_commit(settings):
    settings.SCORING_ON_FINAL_VERDICT = False


def press_all_at_once(press, people) -> list:
    """Call press(person) in one thread per person, all released at once; the results."""
    barrier = threading.Barrier(len(people))
    results: list = [None] * len(people)

    def body(position, person):
        try:
            barrier.wait(timeout=30)
            results[position] = press(person)
        except Exception as exc:  # noqa: BLE001 - reported by the assertions
            results[position] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=body, args=(n, p)) for n, p in enumerate(people)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return results


def test_fifty_reviewers_pressing_next_at_once_get_fifty_different_items():
    study = study_create(slug="race", name="race")
    built = build_study(study, clips=60, models=2, windows=2, annotators=4, reviewers=PRESSES)
    results = press_all_at_once(lambda r: review_claim_next(study=study, actor=r), built.reviewers)
    errors = [r for r in results if not isinstance(r, int)]
    assert not errors, errors[:3]
    claimed = list(results)
    assert len(set(claimed)) == PRESSES
    rows = Annotation.objects.filter(pk__in=claimed)
    assert {(a.state, a.reviewer_id) for a in rows} == {
        (workflow.IN_REVIEW, r.pk) for r in built.reviewers
    }
    assert AuditEvent.objects.filter(action="claim", annotation__in=claimed).count() == PRESSES


def test_fifty_annotators_pressing_start_next_at_once_each_open_their_own_first_item():
    study = study_create(slug="race", name="race")
    built = build_study(
        study, clips=100, models=2, windows=2, annotators=PRESSES, submitted_share=0.0
    )
    results = press_all_at_once(
        lambda a: annotation_start_next(study=study, annotator=a), built.annotators
    )
    errors = [r for r in results if not isinstance(r, int)]
    assert not errors, errors[:3]
    assert len(set(results)) == PRESSES
    for person, opened in zip(built.annotators, results, strict=True):
        first = Annotation.objects.filter(annotator=person).order_by("assigned_at", "id").first()
        assert opened == first.pk
        assert Annotation.objects.get(pk=opened).state == workflow.IN_PROGRESS


def test_a_press_skips_an_item_another_press_holds_instead_of_waiting():
    study = study_create(slug="race", name="race")
    built = build_study(study, clips=10, models=1, windows=2, annotators=2, reviewers=2)
    first, second = built.reviewers
    holding, release = threading.Event(), threading.Event()
    held: dict = {}

    def hold_a_claim():
        try:
            with transaction.atomic():
                held["item"] = review_claim_next(study=study, actor=first)
                holding.set()
                release.wait(timeout=30)
        finally:
            connection.close()

    thread = threading.Thread(target=hold_a_claim)
    thread.start()
    try:
        assert holding.wait(timeout=30)
        with transaction.atomic():
            with connection.cursor() as cursor:
                # Waiting for the held row would fail this press instead of hanging the test.
                cursor.execute("SET LOCAL lock_timeout = '2s'")
            mine = review_claim_next(study=study, actor=second)
    finally:
        release.set()
        thread.join(timeout=30)
    assert mine is not None and mine != held["item"]
