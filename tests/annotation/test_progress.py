"""The progress page: per annotator, reviewer and model, and agreement on double annotations."""

from __future__ import annotations

import pytest
from django.test import Client

from annotation.selectors.progress import study_progress
from annotation.services.studies import membership_grant
from annotation.services.workflow import (
    annotation_open,
    annotation_submit,
    annotations_assign,
    review_amend,
    review_approve,
    review_claim,
    review_return,
)
from tests.annotation.studybuild import (
    SECRET_MODEL,
    caption_record,
    captions_add,
    complete,
    fake_clip,
)
from tests.conftest import in_setup

pytestmark = pytest.mark.django_db

ALL_ACCEPTED = [{"index": i, "verdict": "accept"} for i in range(3)]


@pytest.fixture
def worked(study, personas, make_user):
    """Three captions, each annotated by two annotators; some approved, amended, returned.

    annotator:  c1 approved, c2 amended, c3 submitted; active 30, 60, 90 s; rejects every overview.
    annotator2: c1 returned then resubmitted, c2 and c3 submitted; 10 s each; accepts c1's overview.
    """
    second = make_user("annotator2")
    membership_grant(study=study, user=second, role="annotator")
    fake_clip(study, "b")
    captions = captions_add(
        study, [caption_record("b", model) for model in (SECRET_MODEL, "m2", "m3")]
    )
    with in_setup(study):
        annotations_assign(
            study=study, annotators=[personas["annotator"], second], overlap_share=1.0,
            design="clip_blocks",
        )
    first = personas["annotator"]
    mine = {c.model.name: c.annotations.get(annotator=first) for c in captions}
    theirs = {c.model.name: c.annotations.get(annotator=second) for c in captions}
    for name, seconds in zip((SECRET_MODEL, "m2", "m3"), (30, 60, 90), strict=True):
        mine[name] = complete(mine[name], first, active_seconds=seconds)
    complete(
        theirs[SECRET_MODEL],
        second,
        overview={"verdict": "accept"},
        windows=ALL_ACCEPTED,
        active_seconds=10,
    )
    complete(
        theirs["m2"],
        second,
        overview={"verdict": "reject", "text": "Other.", "modes": ["omission"]},
        windows=ALL_ACCEPTED,
        active_seconds=10,
    )
    complete(theirs["m3"], second, active_seconds=10)

    reviewer = personas["reviewer"]
    for annotation in (mine[SECRET_MODEL], mine["m2"], theirs[SECRET_MODEL]):
        review_claim(annotation_id=annotation.pk, actor=reviewer)
    review_approve(annotation_id=mine[SECRET_MODEL].pk, actor=reviewer)
    review_amend(
        annotation_id=mine["m2"].pk, actor=reviewer, changes={"overview": {"modes": ["omission"]}}
    )
    returned = review_return(
        annotation_id=theirs[SECRET_MODEL].pk, actor=reviewer,
        units=[{"unit": "window:0", "comment": "Look again."}],
    )
    reopened = annotation_open(annotation=returned, actor=second)
    annotation_submit(annotation_id=reopened.pk, actor=second, base_version=reopened.version,
                      replies={"window:0": "It is right as it is."})
    return study


def rows_by_label(rows):
    return {row.label: row for row in rows}


def test_annotator_rows_count_states_submissions_time_and_rates(worked):
    rows = rows_by_label(study_progress(study=worked).annotators)
    first, second = rows["annotator"], rows["annotator2"]
    assert first.counts == {"approved": 2, "submitted": 1}
    assert (first.done, first.throughput, first.median_seconds) == (3, 3.0, 60.0)
    assert (first.return_rate, first.amendment_rate) == (0.0, 0.5)
    # The return is remembered although the item has been resubmitted since.
    assert second.counts == {"submitted": 3}
    assert (second.done, second.median_seconds, second.return_rate, second.amendment_rate) == (
        4,
        10.0,
        1.0,
        None,
    )


def test_reviewer_row_counts_decisions_and_claim_to_decision_time(worked):
    (row,) = study_progress(study=worked).reviewers
    assert row.label == "reviewer"
    assert row.counts == {"approved": 2, "submitted": 1}
    assert (row.done, row.returns, row.approvals, row.amends) == (3, 1, 1, 1)
    assert row.return_rate == pytest.approx(1 / 3) and row.amendment_rate == 0.5
    assert row.median_seconds is not None and row.median_seconds >= 0


def test_claim_to_decision_counts_from_the_latest_claim_and_only_once(worked, make_user):
    """Per annotation, a decision pairs with the reviewer's claim just before it: a second
    claim restarts the clock, a decision without a claim (or after one already paired) adds
    no time, and another reviewer's claim is not theirs."""
    from datetime import timedelta

    from django.db import connection

    from annotation.models import Annotation, AuditEvent

    second = make_user("reviewer2")
    membership_grant(study=worked, user=second, role="reviewer")
    other = make_user("reviewer3")
    first, later = Annotation.objects.filter(caption__clip__study=worked).order_by("pk")[:2]
    start = first.assigned_at
    script = [  # (annotation, actor, action, seconds after start)
        (first, second, "claim", 0), (first, second, "claim", 100), (first, second, "approve", 130),
        (first, second, "return", 200),  # no claim since the approve: no time
        (later, other, "claim", 0), (later, second, "amend", 50),  # someone else's claim
        (later, second, "claim", 300), (later, second, "return", 310),
    ]
    table = AuditEvent._meta.db_table
    with connection.cursor() as cursor:  # at chosen: the model sets it to now, and events never change
        for annotation, actor, action, seconds in script:
            cursor.execute(
                f"INSERT INTO {table} (study_id, annotation_id, actor_id, action, at, before, after) "
                "VALUES (%s, %s, %s, %s, %s, '{}', '{}')",
                [worked.pk, annotation.pk, actor.pk, action, start + timedelta(seconds=seconds)],
            )
    row = next(r for r in study_progress(study=worked).reviewers if r.label == "reviewer2")
    assert (row.done, row.approvals, row.amends, row.returns) == (4, 1, 1, 2)
    assert row.median_seconds == pytest.approx(20)  # the times 30 and 10


def test_model_rows_are_by_alias_with_the_name_beside_it(worked):
    rows = rows_by_label(study_progress(study=worked).models)
    first = rows["Model A"]
    assert first.detail == SECRET_MODEL
    assert first.counts == {"approved": 1, "submitted": 1}
    assert (first.done, first.return_rate, first.amendment_rate) == (3, 0.5, 0.0)
    assert sum(row.total for row in rows.values()) == 6


def test_agreement_reports_kappa_alpha_and_items_per_judgement_and_mode(worked):
    progress = study_progress(study=worked)
    assert progress.double_annotated == 3
    table = {row.label: row.result for row in progress.agreement}
    overview = table["Overview: accept / reject"]
    assert (overview.items, overview.kappa, overview.alpha) == (
        3,
        pytest.approx(0.0),
        pytest.approx(0.0),
    )
    windows = table["Windows: accept / reject"]
    # 9 windows, 7 agreements; marginals 3/9 and 1/9 rejected: kappa = (63 - 51) / (81 - 51).
    assert (windows.items, windows.kappa) == (9, pytest.approx(0.4))
    segmentation = table["Segmentation: accept / reject"]
    assert (segmentation.items, segmentation.kappa, segmentation.alpha) == (3, None, None)
    temporal = table["Mode: Temporal / order"]
    # 12 units (overview and three windows of three captions): 10 agree; tagged 3 and 1 times.
    assert (temporal.items, temporal.kappa) == (12, pytest.approx(18 / 42))
    assert table["Mode: Segmentation"].items == 3


def test_progress_page_shows_the_tables_to_a_study_admin(worked, personas):
    client = Client()
    client.force_login(personas["admin"])
    response = client.get("/studies/s1/progress/")
    assert response.status_code == 200
    html = response.content.decode()
    for text in ("annotator2", SECRET_MODEL, "Model A", "Krippendorff", "33%", 'id="agreement-status"'):
        assert text in html
    agreement = client.get("/studies/s1/progress/agreement/").json()
    assert agreement["double_annotated"] == study_progress(study=worked).double_annotated
    assert "0.400" in {value for row in agreement["rows"] for value in (row["kappa"], row["alpha"])}


def test_the_progress_page_leaves_agreement_to_its_own_request(worked, personas):
    """Agreement reads every unit of every double-annotated caption: the page itself must not."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = Client()
    client.force_login(personas["admin"])
    with CaptureQueriesContext(connection) as captured:
        assert client.get("/studies/s1/progress/").status_code == 200
    assert not any("annotation_windowcorrection" in q["sql"] for q in captured.captured_queries)
    rows = client.get("/studies/s1/progress/agreement/").json()["rows"]
    expected = study_progress(study=worked).agreement
    assert [row["label"] for row in rows] == [row.label for row in expected]
    assert [row["items"] for row in rows] == [row.result.items for row in expected]


@pytest.mark.parametrize("role", ["annotator", "reviewer", "researcher"])
def test_progress_page_tells_other_members_who_may_see_it(worked, personas, role):
    client = Client()
    client.force_login(personas[role])
    response = client.get("/studies/s1/progress/")
    assert response.status_code == 403
    html = response.content.decode()
    assert "Only the study&#x27;s admins see its progress" in html
    assert 'class="topbar"' in html  # the site's own page, not a bare error
    assert client.get("/studies/s1/progress/agreement/").status_code == 403


def test_progress_page_is_not_found_for_outsiders(worked, personas):
    client = Client()
    client.force_login(personas["outsider"])
    assert client.get("/studies/s1/progress/").status_code == 404
    assert client.get("/studies/s1/progress/agreement/").status_code == 404


def test_counts_leave_out_what_was_undone(study, personas, settings):
    """A submission, an approval and an amendment taken back with undo count as nothing, and
    what was decided after them counts once (with its claim-to-decision time)."""
    from annotation.models import Annotation
    from annotation.services.workflow import decision_undo
    from tests.annotation.test_workflow import complete as complete_pass

    annotator, reviewer = personas["annotator"], personas["reviewer"]
    fake_clip(study, "b")
    captions = captions_add(study, [caption_record("b", model) for model in (SECRET_MODEL, "m2", "m3")])
    with in_setup(study):  # a running study's design is frozen
        annotations_assign(study=study, annotators=[annotator], captions=captions, design="clip_blocks")
    items = [annotation_open(annotation=c.annotations.get(), actor=annotator) for c in captions]
    settings.UNDO_SECONDS = 30

    def open_window_passes(annotation):
        Annotation.objects.filter(pk=annotation.pk).update(undo_until=None, undo={})

    # Item 1: submitted, undone, submitted again; approved, undone, approved again.
    first = complete_pass(items[0], annotator)
    decision_undo(annotation_id=first.pk, actor=annotator)
    first = Annotation.objects.get(pk=first.pk)
    first = annotation_submit(annotation_id=first.pk, actor=annotator, base_version=first.version)
    open_window_passes(first)
    review_claim(annotation_id=first.pk, actor=reviewer)
    review_approve(annotation_id=first.pk, actor=reviewer)
    decision_undo(annotation_id=first.pk, actor=reviewer)
    review_approve(annotation_id=first.pk, actor=reviewer)
    # Item 2: amended, undone, then returned.
    second = complete_pass(items[1], annotator)
    open_window_passes(second)
    review_claim(annotation_id=second.pk, actor=reviewer)
    review_amend(annotation_id=second.pk, actor=reviewer, changes={"overview": {"modes": ["omission"]}})
    decision_undo(annotation_id=second.pk, actor=reviewer)
    review_return(annotation_id=second.pk, actor=reviewer, units=[{"unit": "overview", "comment": "Look."}])
    # Item 3: submitted and undone: never submitted.
    third = complete_pass(items[2], annotator)
    decision_undo(annotation_id=third.pk, actor=annotator)

    progress = study_progress(study=study)
    (row,) = progress.annotators
    assert row.counts == {"approved": 1, "returned": 1, "in_progress": 1}
    assert row.done == 2  # two submissions stand, of four made
    assert (row.decisions, row.approvals, row.amends, row.returns) == (2, 1, 0, 1)
    assert (row.return_rate, row.amendment_rate) == (0.5, 0.0)
    assert [n for _, n in row.per_day] == [2]
    assert progress.totals.done == 2
    (reviewed,) = progress.reviewers
    assert (reviewed.done, reviewed.approvals, reviewed.amends, reviewed.returns) == (2, 1, 0, 1)
    assert reviewed.median_seconds is not None
    models = rows_by_label(progress.models)
    assert (models["Model A"].done, models["Model A"].approvals) == (1, 1)
    assert (models["Model B"].done, models["Model B"].amends, models["Model B"].returns) == (1, 0, 1)
    assert models["Model C"].done == 0


def test_the_progress_page_shows_counts_net_of_undo(study, personas, settings):
    from annotation.services.workflow import decision_undo
    from tests.annotation.test_workflow import complete as complete_pass

    annotator = personas["annotator"]
    fake_clip(study, "b")
    (caption,) = captions_add(study, [caption_record("b", SECRET_MODEL)])
    annotations_assign(study=study, annotators=[annotator], captions=[caption])
    settings.UNDO_SECONDS = 30
    item = complete_pass(annotation_open(annotation=caption.annotations.get(), actor=annotator), annotator)
    decision_undo(annotation_id=item.pk, actor=annotator)
    client = Client()
    client.force_login(personas["admin"])
    html = client.get("/studies/s1/progress/").content.decode()
    row = html[html.index('data-row="annotator"'):]
    row = row[: row.index("</tr>")]
    cells = [cell.split(">", 1)[1].split("<", 1)[0] for cell in row.split("<td")[1:]]
    states = study_progress(study=study).states
    assert cells[1 + len(states)] == "0"  # "Submitted, all time": the undone submission is not one


def test_study_page_links_to_progress_for_admins_only(study, personas):
    client = Client()
    client.force_login(personas["admin"])
    assert 'id="progress-link"' in client.get("/studies/s1/").content.decode()
    client.force_login(personas["researcher"])
    assert 'id="progress-link"' not in client.get("/studies/s1/").content.decode()


def test_progress_of_an_empty_study_has_empty_rows_and_no_agreement(study, personas):
    progress = study_progress(study=study)
    assert [row.label for row in progress.annotators] == ["annotator"]
    assert progress.annotators[0].throughput is None
    assert all(row.result.items == 0 and row.result.kappa is None for row in progress.agreement)


def test_kappa_is_the_same_after_an_export_and_import_of_the_study(study, make_user):
    """Kappa pairs the first two annotations of a caption by assignment time, which the bundle
    carries; an import creates them in annotator-name order, which must not change the pairs."""
    from annotation.rules.agreement import cohen_kappa
    from annotation.services.bundles import bundle_export_bytes, bundle_import

    zed, amy = make_user("zed"), make_user("amy")
    for person in (zed, amy):
        membership_grant(study=study, user=person, role="annotator")
    accept = {"verdict": "accept"}
    reject = {"verdict": "reject", "text": "Something else.", "modes": ["omission"]}
    # Per clip: who is assigned first, then each annotator's overview verdict.
    plan = {
        "c1": ((zed, amy), {zed: reject, amy: accept}),
        "c2": ((amy, zed), {amy: reject, zed: accept}),
        "c3": ((zed, amy), {zed: accept, amy: accept}),
        "c4": ((zed, amy), {zed: reject, amy: reject}),
    }
    for name in plan:
        fake_clip(study, name)
    added = captions_add(study, [caption_record(name) for name in plan])
    captions = {c.clip.name: c for c in added}
    for name, (order, verdicts) in plan.items():
        annotations_assign(
            study=study, annotators=list(order), captions=[captions[name]], overlap_share=1.0
        )
        for person in order:
            complete(
                captions[name].annotations.get(annotator=person), person,
                overview=verdicts[person], windows=ALL_ACCEPTED,
            )

    def numbers(of_study):
        return [
            (row.label, row.result.items, row.result.kappa, row.result.alpha)
            for row in study_progress(study=of_study).agreement
        ]

    overview = {row.label: row.result for row in study_progress(study=study).agreement}[
        "Overview: accept / reject"
    ]
    by_assignment = cohen_kappa(["reject", "reject", "accept", "reject"],
                                ["accept", "accept", "accept", "reject"])
    by_name = cohen_kappa(["accept", "reject", "accept", "reject"],
                          ["reject", "accept", "accept", "reject"])
    assert by_assignment != pytest.approx(by_name)  # the order matters for this study
    assert overview.kappa == pytest.approx(by_assignment)

    copy = bundle_import(
        data=bundle_export_bytes(study=study), slug="s1-copy", grant_existing=True
    ).study
    assert numbers(copy) == numbers(study)
    admin = make_user("copy-admin")
    membership_grant(study=copy, user=admin, role="admin")
    client = Client()
    client.force_login(admin)
    rows = client.get(f"/studies/{copy.slug}/progress/agreement/").json()["rows"]
    assert f"{by_assignment:.3f}" in {row["kappa"] for row in rows}


def test_progress_page_of_a_study_with_thousands_of_double_annotated_windows(study, personas):
    """1,800 windows judged twice: the agreement query once put one OR per window in its SQL,
    past SQLite's expression depth (1,000)."""
    from tests.annotation.bulkbuild import build_study

    build_study(study, clips=100, models=3, windows=6, double_share=0.5, annotators=4)
    client = Client()
    client.force_login(personas["admin"])
    response = client.get("/studies/s1/progress/")
    assert response.status_code == 200
    progress = study_progress(study=study)
    table = {row.label: row.result for row in progress.agreement}
    assert progress.double_annotated == 150
    assert table["Overview: accept / reject"].items == 150
    assert table["Windows: accept / reject"].items == 150 * 6
    assert progress.unassigned_captions == 0
