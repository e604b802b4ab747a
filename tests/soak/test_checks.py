"""The soak's oracle (soak.checks), each check shown to catch a planted violation and to pass
the same case without it: a lost save, a decision lost or written twice, a state the ledger
does not allow, a 500, a 503 without Retry-After, a job left queued, too many jobs, a
disconnect fault that never cut a request, idle annotators. Plain data, no database."""

from __future__ import annotations

import itertools
from collections import Counter
from datetime import UTC, datetime, timedelta

from soak.checks import (
    Event,
    Job,
    Stored,
    check_annotations,
    check_answers,
    check_decisions,
    check_disconnects,
    check_jobs,
    check_saves,
    check_state,
    check_workload,
    failed_jobs,
)
from soak.people import PLANTED_CLIP, Request, Sent

T0 = datetime(2026, 1, 1, tzinfo=UTC)
_ticks = itertools.count(1)


def sent(annotation, action, what, acknowledged=True):
    return Sent(annotation, action, what, acknowledged, float(next(_ticks)))


def event(action, actor, after, annotation=1, seconds=0):
    return Event(annotation, action, actor, {"annotator": 1, "reviewer": 2}.get(actor), T0 + timedelta(seconds=seconds),
                 after)


OVERVIEW = {"overview": {"text": "A man walks.", "verdict": "reject", "modes": ["omission"]}}
LONGER = {"overview": {"text": "A man walks past."}}


def after_overview(text, verdict="reject", modes=("omission",)):
    return {"overview.text": text, "overview.verdict": verdict, "overview.modes": list(modes)}


# Saves -------------------------------------------------------------------------------------


def test_acknowledged_saves_found_in_the_trail_and_stored_pass():
    history = [after_overview("A man walks."), after_overview("A man walks past.")]
    saves = [sent(1, "save", OVERVIEW), sent(1, "save", LONGER)]
    assert check_saves("annotation 1", saves, history, history[-1]) == []


def test_an_acknowledged_save_missing_from_the_trail_is_lost():
    history = [after_overview("A man walks.")]  # the second save never reached the trail
    saves = [sent(1, "save", OVERVIEW), sent(1, "save", LONGER)]
    problems = check_saves("annotation 1", saves, history, history[-1])
    assert any("acknowledged save 2 of 2" in p and "not in the audit trail" in p for p in problems)
    assert any("overview.text is stored as 'A man walks.'" in p for p in problems)


def test_the_stored_pass_is_compared_with_what_was_sent_not_the_echo():
    # The trail and the stored pass agree with each other (an echo-based check passes), but the
    # text the annotator sent was altered on the way.
    history = [after_overview("A man walks."), after_overview("A man walks pas.")]
    saves = [sent(1, "save", OVERVIEW), sent(1, "save", LONGER)]
    problems = check_saves("annotation 1", saves, history, history[-1])
    assert len(problems) == 2, problems


def test_saves_out_of_order_in_the_trail_are_found():
    history = [after_overview("A man walks past."), after_overview("A man walks.")]
    saves = [sent(1, "save", LONGER), sent(1, "save", {"overview": {"text": "A man walks."}})]
    assert check_saves("annotation 1", saves, history, history[-1]) == []
    reversed_history = [after_overview("A man walks."), after_overview("A man walks past.")]
    assert check_saves("annotation 1", saves, reversed_history, reversed_history[-1])


def test_a_last_save_without_an_answer_may_or_may_not_be_stored():
    history = [after_overview("A man walks.")]
    saves = [sent(1, "save", OVERVIEW), sent(1, "save", LONGER, acknowledged=False)]
    assert check_saves("annotation 1", saves, history, history[-1]) == []
    landed = history + [after_overview("A man walks past.")]
    assert check_saves("annotation 1", saves, landed, landed[-1]) == []
    assert check_saves("annotation 1", saves, history, after_overview("Something else."))


def test_an_accepted_window_is_the_model_s_again():
    corrected = {"windows": [{"index": 0, "verdict": "reject", "modes": ["factual"], "scene": "Bars. red"}]}
    accepted = {"windows": [{"index": 0, "verdict": "accept"}]}
    history = [{"window:0.verdict": "reject", "window:0.modes": ["factual"], "window:0.scene": "Bars. red"},
               {"window:0.verdict": "accept", "window:0.scene": "Bars."}]
    saves = [sent(1, "save", corrected), sent(1, "save", accepted)]
    assert check_saves("annotation 1", saves, history, history[-1]) == []
    # Rejected again without a new scene: the correction must still be there.
    rejected = {"windows": [{"index": 0, "verdict": "reject"}]}
    saves = [sent(1, "save", corrected), sent(1, "save", rejected)]
    history = [history[0], {**history[0], "window:0.scene": "Bars."}]
    assert check_saves("annotation 1", saves, history, history[-1]) == [
        "annotation 1: window:0.scene is stored as 'Bars.', not as its annotator last sent it: 'Bars. red'"]


# Decisions ---------------------------------------------------------------------------------


def test_an_acknowledged_decision_missing_from_the_trail_is_lost():
    mine = [("reviewer", sent(1, "approve", {}))]
    approved = event("approve", "reviewer", {"state": "approved"})
    assert check_decisions("annotation 1", mine, [approved])["decisions lost"] == []
    found = check_decisions("annotation 1", mine, [])
    assert found["decisions lost"] == ["annotation 1: reviewer's acknowledged approve {} is not in the audit trail"]


def test_a_decision_stored_with_other_content_than_sent_is_lost():
    amend = {"changes": {"overview": {"modes": ["omission", "factual"]}}}
    mine = [("reviewer", sent(1, "amend", amend))]
    right = event("amend", "reviewer", {"overview": {"modes": ["factual", "omission"]}})
    wrong = event("amend", "reviewer", {"overview": {"modes": ["omission"]}})
    assert check_decisions("annotation 1", mine, [right])["decisions lost"] == []
    assert check_decisions("annotation 1", mine, [wrong])["decisions lost"]
    units = {"units": [{"unit": "window:0", "comment": "Please look at this again."}]}
    returned = [("reviewer", sent(1, "return", units))]
    assert check_decisions("annotation 1", returned, [event("return", "reviewer", units)])["decisions lost"] == []
    other = {"units": [{"unit": "overview", "comment": "Please look at this again."}]}
    assert check_decisions("annotation 1", returned, [event("return", "reviewer", other)])["decisions lost"]
    undo = [("annotator", sent(1, "undo", {"undone": "submit"}))]
    other_undo = event("undo", "annotator", {"undone": "lock_overview"})
    assert check_decisions("annotation 1", undo, [other_undo])["decisions lost"]


def test_a_decision_by_someone_else_does_not_count():
    mine = [("reviewer", sent(1, "approve", {}))]
    assert check_decisions("annotation 1", mine, [event("approve", "reviewer2", {})])["decisions lost"]


def test_a_decision_written_twice_for_one_request_is_found():
    mine = [("annotator", sent(1, "submit", {"replies": {}}))]
    twice = [event("submit", "annotator", {"state": "submitted"}, seconds=s) for s in (1, 2)]
    found = check_decisions("annotation 1", mine, twice)
    assert found["decisions lost"] == []
    assert found["decisions written more often than sent"] == [
        "annotation 1: 2 submit by annotator in the audit trail, 1 sent"]


def test_a_decision_sent_without_an_answer_may_be_in_the_trail_once():
    mine = [("annotator", sent(1, "lock_overview", {}, acknowledged=False))]
    for trail in ([], [event("lock_overview", "annotator", {})]):
        found = check_decisions("annotation 1", mine, trail)
        assert found == {"decisions lost": [], "decisions written more often than sent": []}


# State -------------------------------------------------------------------------------------


def stored(state, locked=True, annotator=None, pk=1):
    return Stored(pk, state, locked, annotator or {})


def test_the_state_follows_the_last_acknowledged_action():
    assert check_state(stored("returned"), [sent(1, "submit", {}), sent(1, "return", {"units": []})]) == []
    assert check_state(stored("approved"), [sent(1, "submit", {}), sent(1, "return", {"units": []})])
    assert check_state(stored("in_review"), [sent(1, "approve", {}), sent(1, "undo", {"undone": "approve"})]) == []
    assert check_state(stored("approved"), [sent(1, "approve", {}), sent(1, "undo", {"undone": "approve"})])
    assert check_state(stored("in_progress", locked=False), [sent(1, "lock_overview", {})])
    # The last request got no answer: it may or may not have landed.
    assert check_state(stored("submitted"), [sent(1, "submit", {}), sent(1, "undo", {"undone": "submit"}, False)]) == []


def test_check_annotations_puts_it_together():
    history = [event("open", "annotator", {"state": "in_progress"}),
               event("save", "annotator", {"overview.text": "A man walks.", "overview.verdict": "reject",
                                            "overview.modes": ["omission"]}, seconds=1),
               event("lock_overview", "annotator", {}, seconds=2)]
    books = {"annotator": [sent(1, "save", OVERVIEW), sent(1, "lock_overview", {})]}
    good = Stored(1, "in_progress", True, after_overview("A man walks."))
    found = check_annotations([good], {1: history}, books, [], T0)
    assert not any(found.values()), found
    lost = Stored(1, "in_progress", True, after_overview("A man walks."))
    found = check_annotations([lost], {1: history[:2]}, books, [], T0)
    assert found["decisions lost"] and found["audit replay differs"]  # the lock: replayed False, stored True
    claims = [[1, "reviewer", 10.0, None], [1, "reviewer2", 11.0, 12.0]]
    assert check_annotations([good], {1: history}, books, claims, T0)["claimed twice"]


# Answers, workload, disconnects ------------------------------------------------------------


def request(status, retry_after="", path="/api/annotations/1/draft/", person="annotator"):
    return Request(person, "PATCH", path, 1.0, 2.0, status, "{}", "", retry_after)


def test_no_5xx_but_a_503_with_retry_after():
    assert check_answers([request(200), request(409), request(503, "30")]) == {
        "5xx other than 503 with Retry-After": []}
    for wrong in (request(500), request(503), request(502), request(507)):
        assert len(check_answers([request(200), wrong])["5xx other than 503 with Retry-After"]) == 1


def test_annotators_with_nothing_to_do_are_found():
    busy = [request(200)] * 96 + [request(404, path="/api/studies/demo/my-queue/next/")] * 4
    assert check_workload(busy) == {"annotators idle": []}
    idle = [request(200)] * 95 + [request(404, path="/api/studies/demo/my-queue/next/")] * 5
    assert check_workload(idle)["annotators idle"]
    # A 404 for anything else is not idleness.
    assert check_workload([request(200)] * 90 + [request(404)] * 10) == {"annotators idle": []}


def test_a_disconnect_fault_that_cut_nothing_is_found():
    assert check_disconnects(Counter({"mid-body": 2, "mid-response": 2})) == {"disconnects not made": []}
    assert check_disconnects(Counter({"mid-body": 2})) == {"disconnects not made": ["no request was cut mid-response"]}
    assert len(check_disconnects(Counter())["disconnects not made"]) == 2


# Jobs --------------------------------------------------------------------------------------


def test_every_job_ends_done():
    jobs = [Job("scoring", "1", "done"), Job("caption import", "2", "done"), Job("profile", "a", "done"),
            Job("scoring (final verdict)", "3", "cancelled", asked=False),
            Job("scoring (final verdict)", "8", "failed", "the approval was undone before scoring finished",
                asked=False)]
    asked = Counter({"scoring": 1, "caption import": 1, "profile": 1})
    assert check_jobs(jobs, asked) == {"jobs not done": [], "jobs without a request": []}
    for left in (Job("scoring", "4", "queued"), Job("caption import", "5", "failed", "the broker did not answer"),
                 Job("profile", "b", "running"), Job("scoring (final verdict)", "6", "queued", asked=False)):
        found = check_jobs([*jobs, left], asked + Counter({left.kind: 1}))
        assert len(found["jobs not done"]) == 1, left


def test_only_the_planted_import_may_be_refused_and_it_must_be():
    planted = Job("caption import", "7", "refused", f"line 1, clip: unknown clip {PLANTED_CLIP}", planted=True)
    asked = Counter({"caption import": 1})
    assert check_jobs([planted], asked)["jobs not done"] == []
    assert check_jobs([Job("caption import", "7", "done", planted=True)], asked)["jobs not done"]
    assert check_jobs([Job("caption import", "7", "refused", "unknown clip x")], asked)["jobs not done"]


def test_every_failed_job_is_listed_with_its_error():
    jobs = [Job("profile", f"p{n}", "failed", f"The export stopped: reason {n}") for n in range(15)]
    jobs += [Job("scoring", "1", "done"), Job("scoring", "2", "running"), Job("caption import", "3", "failed")]
    listed = failed_jobs(jobs)
    assert len(listed) == 16  # all of them, not the first ten of a violation's details
    assert listed[14] == "profile job p14: failed: The export stopped: reason 14"
    assert listed[15] == "caption import job 3: failed: (no error recorded)"


def test_more_jobs_than_asked_for_are_found():
    jobs = [Job("profile", "a", "done"), Job("profile", "b", "done")]
    assert check_jobs(jobs, Counter({"profile": 1}))["jobs without a request"] == [
        "2 profile jobs in the database, 1 asked for"]
    assert check_jobs(jobs, Counter({"profile": 2}))["jobs without a request"] == []


# Read from the database ------------------------------------------------------------------


def test_the_ledger_against_a_real_annotation(annotation, personas):
    """read_annotations on a real audit trail: what the services stored passes; a save the
    annotator was told was stored but the server does not have is found, and so is a stored
    text that differs from what was sent."""
    from annotation.models import CorrectionPass
    from annotation.services.annotating import annotation_save, overview_lock
    from soak.checks import read_annotations

    annotator = personas["annotator"]
    first = {"overview": {"text": "A man walks.", "verdict": "reject", "modes": ["omission"]}}
    second = {"overview": {"text": "A man walks past two cars."}}
    version = annotation_save(annotation_id=annotation.pk, actor=annotator, base_version=annotation.version,
                              changes=first).version
    version = annotation_save(annotation_id=annotation.pk, actor=annotator, base_version=version,
                              changes=second).version
    overview_lock(annotation_id=annotation.pk, actor=annotator, base_version=version)
    book = [sent(annotation.pk, "save", first), sent(annotation.pk, "save", second),
            sent(annotation.pk, "lock_overview", {})]
    since = T0.replace(year=2000)

    found = check_annotations(*read_annotations("s1"), {"annotator": book}, [], since)
    assert not any(found.values()), found

    never_stored = sent(annotation.pk, "save", {"overview": {"text": "A man walks past two red cars."}})
    book.insert(2, never_stored)
    found = check_annotations(*read_annotations("s1"), {"annotator": book}, [], since)
    assert len(found["saves lost"]) == 2, found  # not in the trail, not what is stored
    book.remove(never_stored)

    CorrectionPass.objects.filter(annotation=annotation).update(overview_text="A man walks past two cats.")
    found = check_annotations(*read_annotations("s1"), {"annotator": book}, [], since)
    assert any("overview.text is stored as 'A man walks past two cats.'" in p for p in found["saves lost"])
    assert found["audit replay differs"]
