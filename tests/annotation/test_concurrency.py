"""Races on PostgreSQL: two people acting on one annotation at once, each on their own connection.

Each test runs two threads (Django gives each thread its own database connection).
Where the interleaving matters, the first thread holds its transaction open after its
UPDATE until the second thread is blocked on the same row, so the race really happens
rather than the two calls running one after the other.
"""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, transaction

from annotation.models import Annotation, AuditEvent
from annotation.services.studies import membership_grant
from annotation.services.workflow import (
    Conflict,
    annotation_save,
    annotations_assign,
    review_approve,
    review_claim,
    review_return,
)
from tests.annotation.studybuild import caption_record, captions_add, complete, fake_clip

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def no_scoring_on_commit(settings):
    """These transactions really commit; scoring a final verdict is not what is tested here."""
    settings.SCORING_ON_FINAL_VERDICT = False
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def submitted(study, personas, make_user):
    """A submitted annotation of `study` and a second QC reviewer."""
    fake_clip(study, "b")
    (caption,) = captions_add(study, [caption_record("b")])
    annotations_assign(study=study, annotators=[personas["annotator"]], captions=[caption])
    annotation = complete(caption.annotations.get(), personas["annotator"])
    second = make_user("second-reviewer")
    membership_grant(study=study, user=second, role="reviewer")
    return annotation, personas["reviewer"], second


def run_in_thread(target, results: dict, key: str) -> threading.Thread:
    def body():
        try:
            target()
            results[key] = "ok"
        except Conflict:
            results[key] = "conflict"
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            results[key] = f"error: {exc!r}"
        finally:
            connection.close()

    thread = threading.Thread(target=body)
    thread.start()
    return thread


def race(first, second) -> dict:
    """Run `first` and hold its transaction open until `second` has started waiting on the row."""
    results: dict[str, str] = {}
    first_acted = threading.Event()

    def first_then_wait():
        with transaction.atomic():
            first()
            first_acted.set()
            time.sleep(0.5)  # the second thread is now blocked on the row lock

    def second_after_first():
        first_acted.wait(timeout=10)
        second()

    threads = [
        run_in_thread(first_then_wait, results, "first"),
        run_in_thread(second_after_first, results, "second"),
    ]
    for thread in threads:
        thread.join(timeout=30)
    return results


def together(*calls) -> dict:
    """Start all calls at the same instant."""
    results: dict[str, str] = {}
    barrier = threading.Barrier(len(calls))

    def gated(call):
        def go():
            barrier.wait(timeout=10)
            call()

        return go

    threads = [run_in_thread(gated(call), results, str(n)) for n, call in enumerate(calls)]
    for thread in threads:
        thread.join(timeout=30)
    return results


def test_two_reviewers_claiming_one_item_while_the_first_is_uncommitted_one_wins(submitted):
    annotation, reviewer, second = submitted
    results = race(
        lambda: review_claim(annotation_id=annotation.pk, actor=reviewer),
        lambda: review_claim(annotation_id=annotation.pk, actor=second),
    )
    assert results == {"first": "ok", "second": "conflict"}
    annotation.refresh_from_db()
    assert (annotation.state, annotation.reviewer) == ("in_review", reviewer)
    assert AuditEvent.objects.filter(annotation=annotation, action="claim").count() == 1


def test_two_reviewers_claiming_at_the_same_instant_exactly_one_wins(submitted):
    annotation, reviewer, second = submitted
    results = together(
        lambda: review_claim(annotation_id=annotation.pk, actor=reviewer),
        lambda: review_claim(annotation_id=annotation.pk, actor=second),
    )
    assert sorted(results.values()) == ["conflict", "ok"]
    annotation.refresh_from_db()
    winner = reviewer if results["0"] == "ok" else second
    assert annotation.reviewer == winner
    claims = AuditEvent.objects.filter(annotation=annotation, action="claim")
    assert list(claims.values_list("actor", flat=True)) == [winner.pk]


def test_approve_and_return_of_one_claim_at_once_leave_exactly_one_decision(submitted):
    annotation, reviewer, _ = submitted
    review_claim(annotation_id=annotation.pk, actor=reviewer)
    results = race(
        lambda: review_approve(annotation_id=annotation.pk, actor=reviewer),
        lambda: review_return(annotation_id=annotation.pk, actor=reviewer,
                              units=[{"unit": "overview", "comment": "Look again."}]),
    )
    assert results == {"first": "ok", "second": "conflict"}
    annotation.refresh_from_db()
    assert annotation.state == "approved" and annotation.return_comment == ""
    decisions = AuditEvent.objects.filter(annotation=annotation, action__in=["approve", "return"])
    assert list(decisions.values_list("action", flat=True)) == ["approve"]


@pytest.fixture
def in_progress(study, personas):
    fake_clip(study, "b")
    (caption,) = captions_add(study, [caption_record("b")])
    annotations_assign(study=study, annotators=[personas["annotator"]], captions=[caption])
    from annotation.services.workflow import annotation_open

    return annotation_open(
        annotation=caption.annotations.get(), actor=personas["annotator"]
    ), personas["annotator"]


def autosave(annotation, annotator, text: str):
    return lambda: annotation_save(
        annotation_id=annotation.pk,
        actor=annotator,
        base_version=annotation.version,
        changes={"overview": {"verdict": "reject", "text": text}},
    )


def test_two_autosaves_on_one_base_version_while_the_first_is_uncommitted_one_is_a_conflict(
    in_progress,
):
    annotation, annotator = in_progress
    results = race(
        autosave(annotation, annotator, "tab one"), autosave(annotation, annotator, "tab two")
    )
    assert results == {"first": "ok", "second": "conflict"}
    annotation = Annotation.objects.get(pk=annotation.pk)
    assert annotation.passes.get().overview_text == "tab one"
    assert AuditEvent.objects.filter(annotation=annotation, action="save").count() == 1


def test_two_autosaves_on_one_base_version_at_the_same_instant_exactly_one_is_stored(in_progress):
    annotation, annotator = in_progress
    base = annotation.version
    results = together(
        autosave(annotation, annotator, "tab 0"), autosave(annotation, annotator, "tab 1")
    )
    assert sorted(results.values()) == ["conflict", "ok"]
    winner = "0" if results["0"] == "ok" else "1"
    reloaded = Annotation.objects.get(pk=annotation.pk)
    assert reloaded.version == base + 1
    assert reloaded.passes.get().overview_text == f"tab {winner}"
