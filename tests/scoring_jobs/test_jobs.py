"""Scoring jobs: what they store, running twice, failures kept per metric, enqueueing on commit."""

from __future__ import annotations

import pytest
from django.db import transaction

from annotation.errors import ServiceError
from scoring import families
from scoring.models import ScoreJob, ScoreResult
from scoring.services import score_job_create, score_job_run
from scoring.tasks import run_score_job
from tests.scoring_jobs.conftest import CORRECTED_OVERVIEW, OVERVIEW, finish_verdict

pytestmark = pytest.mark.django_db

EDIT = ["words_changed", "char_similarity", "near_total"]


def verdict_job(approved, metrics=EDIT, **extra):
    return score_job_create(
        study=approved.caption.clip.study,
        kind="verdict",
        annotation=approved,
        metrics=metrics,
        enqueue=False,
        **extra,
    )


def rows():
    return sorted(
        ScoreResult.objects.values_list(
            "pk", "item_key", "subject", "metric", "judge_or_backend", "metric_version", "value"
        )
    )


def test_a_verdict_job_scores_the_overview_and_every_window_field(approved, fast_scoring):
    job = verdict_job(approved)
    assert score_job_run(job_id=job.pk) == "ran"
    job.refresh_from_db()
    assert (job.status, job.progress_done, job.progress_total, job.errors) == ("done", 5, 5, {})
    found = {
        (r.subject, r.window.index if r.window else None, r.metric): r.value
        for r in ScoreResult.objects.select_related("window")
    }
    assert len(found) == 5 * 3  # overview + 2 windows x (scene, shot), three metrics each
    assert (
        found[("overview", None, "words_changed")] == 5.0
    )  # man->woman, brown->black, at sunset->in the morning
    assert found[("window_scene", 0, "words_changed")] == 1.0
    assert found[("window_scene", 1, "words_changed")] == 0.0  # accepted: final = original
    assert found[("window_shot", 0, "char_similarity")] == 1.0
    overview = ScoreResult.objects.get(subject="overview", metric="words_changed")
    assert (overview.annotation_id, overview.caption_id, overview.job_id) == (
        approved.pk,
        approved.caption_id,
        job.pk,
    )
    assert overview.judge_or_backend == "" and overview.metric_version == "edit-1"


def test_running_the_task_twice_leaves_the_same_rows(approved, fast_scoring):
    job = verdict_job(approved)
    assert run_score_job(job.pk) == "ran"
    first = rows()
    assert run_score_job(job.pk) == "finished"  # the claim fails: nothing runs again
    assert rows() == first
    job.refresh_from_db()
    assert job.attempts == 1


def test_a_second_job_over_the_same_items_updates_the_rows_in_place(approved, fast_scoring):
    run_score_job(verdict_job(approved).pk)
    first = rows()
    second = verdict_job(approved)
    run_score_job(second.pk)
    assert rows() == first  # same ids, same values: upserted, not duplicated
    assert set(ScoreResult.objects.values_list("job", flat=True)) == {second.pk}


def test_an_amended_verdict_is_scored_against_the_qc_pass(assigned, personas, fast_scoring):
    amended = finish_verdict(
        assigned,
        personas,
        amend={
            "overview": {
                "verdict": "reject",
                "text": OVERVIEW + " Gulls fly overhead.",
                "modes": ["omission"],
            },
        },
    )
    run_score_job(verdict_job(amended).pk)
    overview = ScoreResult.objects.get(subject="overview", metric="words_changed")
    assert overview.value == 3.0


def test_a_job_for_an_unapproved_annotation_fails_saying_why(assigned, fast_scoring):
    job = verdict_job(assigned)
    run_score_job(job.pk)
    job.refresh_from_db()
    assert job.status == "failed"
    assert "no final verdict" in job.errors["job"]


def test_a_failing_family_is_recorded_and_the_others_are_stored(approved, settings, closed_port):
    settings.LLMFACTS_BASE_URL = f"http://127.0.0.1:{closed_port}/v1"
    settings.LLMFACTS_MODEL = "test-model"
    settings.LLMFACTS_RETRIES = 0
    job = verdict_job(approved, metrics=["words_changed", "llmfacts_f1"])
    run_score_job(job.pk)
    job.refresh_from_db()
    assert job.status == "partial"
    assert list(job.errors) == ["llmfacts_f1"]
    assert f"127.0.0.1:{closed_port}" in job.errors["llmfacts_f1"]
    assert set(ScoreResult.objects.values_list("metric", flat=True)) == {"words_changed"}
    assert job.progress_done == job.progress_total == 10


def test_llmfacts_without_settings_fails_alone_saying_it_is_not_configured(approved):
    job = verdict_job(approved, metrics=["char_similarity", "llmfacts_f1"])
    run_score_job(job.pk)
    job.refresh_from_db()
    assert job.status == "partial"
    assert "not configured" in job.errors["llmfacts_f1"]
    assert ScoreResult.objects.filter(metric="char_similarity").count() == 5


def test_llmfacts_runs_by_default_only_when_configured(settings):
    assert "llmfacts_f1" not in families.verdict_default_metrics()
    settings.LLMFACTS_BASE_URL, settings.LLMFACTS_MODEL = "http://127.0.0.1:9/v1", "m"
    assert "llmfacts_f1" in families.verdict_default_metrics()


def test_every_family_failing_fails_the_job(approved):
    job = verdict_job(approved, metrics=["llmfacts_f1"])
    run_score_job(job.pk)
    job.refresh_from_db()
    assert job.status == "failed"


def test_corpus_metrics_are_refused_in_a_verdict_job(approved):
    with pytest.raises(ServiceError, match="corpus-relative"):
        verdict_job(approved, metrics=["words_changed", "cider"])


def test_unknown_metrics_are_refused(study):
    with pytest.raises(ServiceError, match="Unknown metric"):
        score_job_create(study=study, metrics=["bleu9"], enqueue=False)


def test_the_job_is_sent_only_after_the_transaction_commits(
    approved, fast_scoring, monkeypatch, django_capture_on_commit_callbacks
):
    sent = []
    monkeypatch.setattr(run_score_job, "apply_async", lambda **kw: sent.append(kw))
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        with transaction.atomic():
            job = score_job_create(
                study=approved.caption.clip.study, kind="verdict", annotation=approved, metrics=EDIT
            )
        assert sent == []  # committed the inner block, but the outer transaction is still open
    assert len(callbacks) == 1
    callbacks[0]()
    assert sent == [{"args": [job.pk], "task_id": job.task_id}]


def test_approving_a_verdict_queues_its_scoring_and_without_a_broker_it_runs(
    assigned, personas, fast_scoring, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        approved = finish_verdict(assigned, personas)
    job = ScoreJob.objects.get()
    assert (job.kind, job.annotation_id, job.status) == ("verdict", approved.pk, "done")
    assert job.metrics == fast_scoring.SCORING_VERDICT_METRICS
    assert ScoreResult.objects.filter(annotation=approved).count() == 15


def test_no_job_is_queued_before_the_approval_commits(assigned, personas, fast_scoring):
    finish_verdict(assigned, personas)  # the test transaction never commits
    assert not ScoreJob.objects.exists()


@pytest.mark.parametrize(("error", "status"), [
    # The broker not answering: the job waits for recovery to send it again.
    (ConnectionError("broker is down"), "queued"),
    (RuntimeError("the message could not be encoded"), "failed"),
])
def test_a_job_that_cannot_be_sent_does_not_undo_the_approval(
    assigned, personas, fast_scoring, monkeypatch, django_capture_on_commit_callbacks, error,
    status,
):
    def broken(**kwargs):
        raise error

    monkeypatch.setattr(run_score_job, "apply_async", broken)
    with django_capture_on_commit_callbacks(execute=True):
        approved = finish_verdict(assigned, personas)
    approved.refresh_from_db()
    assert approved.state == "approved"
    job = ScoreJob.objects.get()
    assert job.status == status
    if status == "failed":
        assert str(error) in job.errors["job"]
    else:
        assert job.errors == {}


def test_a_run_taken_over_by_a_redelivery_of_its_task_resumes_without_recomputing(
    approved, fast_scoring
):
    job = verdict_job(approved)
    ScoreJob.objects.filter(pk=job.pk).update(task_id="t-1")
    assert score_job_run(job_id=job.pk, task_id="t-1") == "ran"
    before = rows()
    # As if the worker died before acknowledging: the job is still running under that task.
    ScoreJob.objects.filter(pk=job.pk).update(status="running")
    assert score_job_run(job_id=job.pk, task_id="another") == "busy"
    assert score_job_run(job_id=job.pk, task_id="t-1") == "ran"
    job.refresh_from_db()
    assert (job.status, job.attempts, job.progress_done) == ("done", 2, 5)
    assert rows() == before


def test_a_database_error_mid_job_is_retried_and_the_retry_resumes_the_job(
    approved, fast_scoring, monkeypatch
):
    from django.db import OperationalError

    from scoring import services

    job = verdict_job(approved)
    real_upsert, calls = services._upsert, []

    def flaky_upsert(rows):
        calls.append(len(rows))
        if len(calls) == 2:
            raise OperationalError("server closed the connection unexpectedly")
        real_upsert(rows)

    monkeypatch.setattr(services, "_upsert", flaky_upsert)
    # Eager, not propagating: apply() then runs the retry itself, as a worker would later.
    result = run_score_job.apply(args=[job.pk], task_id=job.task_id, throw=False)
    assert result.successful(), result.traceback
    job.refresh_from_db()
    assert (job.status, job.attempts) == ("done", 2)  # the retry, same task, took the job back
    assert ScoreResult.objects.count() == 15
    # Chunks of 1 overview and 2 + 2 window fields, 3 metrics each. The retry skipped the
    # overview, stored before the error, and wrote the two chunks of windows.
    assert calls == [3, 6, 6, 6]


def test_a_stale_running_job_can_be_taken_over_after_its_lease(approved, fast_scoring, settings):
    job = verdict_job(approved)
    ScoreJob.objects.filter(pk=job.pk).update(status="running", heartbeat_at="2000-01-01T00:00Z")
    assert score_job_run(job_id=job.pk) == "ran"
    job.refresh_from_db()
    assert job.status == "done"


@pytest.mark.slow
def test_default_verdict_scoring_stores_embedding_metrics_for_each_judge(approved):
    job = verdict_job(approved, metrics=None)
    run_score_job(job.pk)
    job.refresh_from_db()
    assert job.status == "done", job.errors
    judges = set(
        ScoreResult.objects.filter(metric="cospar").values_list("judge_or_backend", flat=True)
    )
    assert judges == {"minilm", "e5-small"}
    same = ScoreResult.objects.get(
        item_key__endswith=":shot", window__index=0, metric="cospar", judge_or_backend="minilm"
    )
    assert same.value == pytest.approx(1.0, abs=1e-5)  # the shot was not changed
    assert CORRECTED_OVERVIEW  # (the overview changed: its cosine is below 1)
    changed = ScoreResult.objects.get(
        subject="overview", metric="cospar", judge_or_backend="minilm"
    )
    assert changed.value < 0.99


@pytest.mark.slow
def test_a_study_job_scores_captions_against_their_references_as_one_corpus(approved, study):
    from tests.scoring_jobs.conftest import import_captions, import_references, make_clip

    texts = {
        "c1": (
            "A red car drives down a wet street at night.",
            ["A red car drives along a rainy street at night.", "A car on a wet road after dark."],
        ),
        "c2": (
            "Two children play football in a park.",
            ["Two kids kick a ball on the grass in a park.", "Children playing soccer outdoors."],
        ),
        "c3": (
            "A chef chops onions in a small kitchen.",
            ["A cook slices onions on a wooden board.", "Someone chops vegetables in a kitchen."],
        ),
    }
    for name, (overview, references) in texts.items():
        make_clip(study, name)
        import_captions(
            study,
            [
                {
                    "clip": name,
                    "model": "m1",
                    "overview": overview,
                    "windows": [{"start": 0, "end": 6, "scene": "A scene.", "shot": "A shot."}],
                }
            ],
        )
        import_references(study, [{"clip": name, "text": text} for text in references])
    job = score_job_create(
        study=study, metrics=["bleu4", "cider", "cospar"], judges=["minilm"], enqueue=False
    )
    run_score_job(job.pk)
    job.refresh_from_db()
    assert job.status == "done", job.errors

    cider = ScoreResult.objects.filter(subject="caption_vs_reference", metric="cider")
    assert cider.count() == 3
    for row in cider:
        assert row.value > 0 and row.dep_hash
        assert len(row.detail["reference_ids"]) == 2
        assert row.detail["idf_documents"] == 4  # one per clip of the study: beach, c1..c3

    cospar = ScoreResult.objects.get(
        subject="caption_vs_reference", metric="cospar", caption__clip__name="c1"
    )
    per_reference = [entry["value"] for entry in cospar.detail["per_reference"]]
    assert len(per_reference) == 2 and cospar.value == pytest.approx(sum(per_reference) / 2)

    # The final verdict's overview, with its correction as the (gold) reference.
    gold = ScoreResult.objects.get(subject="overview", metric="bleu4")
    assert gold.annotation_id == approved.pk and gold.value is not None
    # Reference metrics are not computed per window.
    assert not ScoreResult.objects.filter(subject__startswith="window", metric="cider").exists()
