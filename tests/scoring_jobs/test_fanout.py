"""A study job fans out into chunks: real workers share them, a failing chunk stays alone, a
second job scores only what changed, and each family's chunks go to its own queue.

The study: clips k0..k2, each with captions by models A, B (accepted) and C (rejected and
corrected), every verdict final, and two references per clip; model D's caption of k0 is
assigned but not yet final (a test makes it final).
"""

from __future__ import annotations

import time

import pytest

from annotation.models import Annotation, Caption
from annotation.services.workflow import annotations_assign
from scoring.chunks import score_job_cancel
from scoring.metrics.registry import METRICS
from scoring.models import ScoreChunk, ScoreJob, ScoreResult, SharedCacheEntry
from scoring.services import score_job_create, score_job_run
from tests.annotation.studybuild import caption_record, captions_add, complete, fake_clip
from tests.conftest import in_setup
from tests.profiles.conftest import approve
from tests.scoring_jobs.conftest import import_references

ACCEPT_ALL = [{"index": i, "verdict": "accept"} for i in range(3)]
CLIPS = ["k0", "k1", "k2"]
EDIT = ["words_changed", "char_similarity", "near_total"]
REFERENCE = ["bleu4", "meteor", "rouge_l", "cider"]
EMBEDDING = ["cospar", "fine_f1"]
# Small chunks, so that even this small study makes many of them.
SMALL_CHUNKS = "edit=4,reference=5,embedding=6"


def make_final(annotation, personas):
    model = annotation.caption.model.name
    overview = (
        {"verdict": "reject", "text": f"A test card whose {model.lower()} counter stops.",
         "modes": ["factual"]}
        if model in "CD" else {"verdict": "accept"}
    )
    return approve(
        complete(annotation, personas["annotator"], overview=overview, windows=ACCEPT_ALL),
        personas["reviewer"],
    )


@pytest.fixture
def table_study(study, personas, settings):
    # These tests start their study jobs themselves (no verdict jobs, no live scores).
    settings.SCORING_ON_FINAL_VERDICT = False
    for name in CLIPS:
        fake_clip(study, name)
    records = [
        caption_record(clip, model, words=f"{model.lower()} counter on clip {clip}")
        for clip in CLIPS for model in "ABC"
    ] + [caption_record("k0", "D", words="d counter on clip k0")]
    captions_add(study, records)
    import_references(study, [
        {"clip": clip, "text": f"A test card on clip {clip} with a counter {n}."}
        for clip in CLIPS for n in (1, 2)
    ])
    with in_setup(study):  # a running study's design is frozen
        annotations_assign(study=study, annotators=[personas["annotator"]], design="clip_blocks",
                           captions=Caption.objects.filter(clip__study=study).order_by("pk"))
    for annotation in Annotation.objects.filter(caption__clip__study=study).exclude(
        caption__model__name="D"
    ):
        make_final(annotation, personas)
    return study


def stored(study) -> dict:
    """Every stored result of the study by its key, with what was stored."""
    return {
        (row.item_key, row.metric, row.judge_or_backend, row.metric_version):
            (row.value, row.detail, row.dep_hash, row.subject, row.caption_id, row.annotation_id)
        for row in ScoreResult.objects.filter(study=study)
    }


def wait_for(condition, *, workers, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        for worker in workers:
            assert worker.poll() is None, f"a worker died while waiting for {what}"
        time.sleep(0.2)
    pytest.fail(f"{what} did not happen in {seconds} s")


def run_here(job) -> ScoreJob:
    """Run a study job in this process (chunk after chunk, as `manage.py score` does)."""
    assert score_job_run(job_id=job.pk, on_progress=lambda progress: None) == "ran"
    job.refresh_from_db()
    return job


# --------------------------------------------------------------------------- in one process


@pytest.mark.django_db
def test_a_study_job_cuts_its_items_into_chunks_of_whole_clips(table_study, settings):
    settings.SCORING_STUDY_CHUNK_ITEMS = {"edit": 4, "reference": 5}
    job = run_here(score_job_create(study=table_study, metrics=EDIT[:1] + ["bleu4"],
                                    enqueue=False))
    assert job.status == "done", job.errors
    chunks = list(ScoreChunk.objects.filter(job=job))
    assert job.chunks_total == len(chunks) == job.chunks_done and job.chunks_failed == 0
    assert job.progress_done == job.progress_total == sum(c.item_count for c in chunks)
    for chunk in chunks:
        assert chunk.status == "done" and chunk.item_count <= {"edit": 4, "reference": 5}[
            chunk.family]
        clips = [item["clip_id"] for item in chunk.items]
        # A clip's items stay together where they fit: clips appear as one run each.
        assert clips == sorted(clips, key=clips.index)
    # 9 final verdicts x (overview + 3 windows x 2 fields) edit items.
    assert sum(c.item_count for c in chunks if c.family == "edit") == 9 * 7


@pytest.mark.django_db
def test_a_second_job_on_an_unchanged_study_scores_nothing(table_study):
    metrics = EDIT[:1] + ["bleu4"]
    first = run_here(score_job_create(study=table_study, metrics=metrics, enqueue=False))
    before = stored(table_study)
    second = run_here(score_job_create(study=table_study, metrics=metrics, enqueue=False))
    assert first.progress_total > 0
    assert (second.status, second.progress_total, second.chunks_total) == ("done", 0, 0)
    assert stored(table_study) == before


@pytest.mark.django_db
def test_one_new_final_verdict_rescores_only_its_clips_leave_out_sets(table_study, personas):
    metrics = EDIT[:1] + ["bleu4"]
    run_here(score_job_create(study=table_study, metrics=metrics, enqueue=False))
    make_final(Annotation.objects.get(caption__model__name="D"), personas)
    k0 = Caption.objects.filter(clip__name="k0")
    job = run_here(score_job_create(study=table_study, metrics=metrics, enqueue=False))
    items = [item for chunk in job.chunks.all() for item in chunk.items]
    assert {item["clip_id"] for item in items} == {k0.first().clip_id}
    by_group: dict[str, int] = {}
    for chunk in job.chunks.all():
        by_group[f"{chunk.family}:{chunk.group}"] = (
            by_group.get(f"{chunk.family}:{chunk.group}", 0) + chunk.item_count)
    # Clip k0 now has A, B accepted and C, D rejected (counted by hand): approved sets 4 (each
    # caption vs the other three), gold 4 (A, B vs {C, D}; C vs {D}; D vs {C}), 4 matched pairs
    # x 2 scored captions against approved and against gold sets (8 + 8), D's new overview, and
    # its 7 edit items; k0's references and the other clips are unchanged.
    assert by_group == {
        "edit:overview": 1, "edit:windows": 6, "reference:overview": 1,
        "reference:approved": 4, "reference:gold": 4,
        "reference:matched_approved": 8, "reference:matched_gold": 8,
    }
    assert job.progress_total == 32 and job.status == "done"


@pytest.mark.django_db
def test_a_chunk_that_fails_for_good_is_named_and_the_other_chunks_are_stored(
    table_study, settings
):
    from tests.scoring_jobs import slow_family

    slow_family.register_failing()
    settings.SCORING_STUDY_CHUNK_ITEMS = {"test-failing": 3}
    settings.SCORING_CHUNK_RETRIES = 1
    poisoned = Caption.objects.get(clip__name="k1", model__name="B")
    Caption.objects.filter(pk=poisoned.pk).update(overview=f"{slow_family.POISON} card.")
    try:
        job = run_here(score_job_create(study=table_study, metrics=[slow_family.FAILING_METRIC],
                                        enqueue=False))
    finally:
        METRICS.pop(slow_family.FAILING_METRIC, None)
    failed = [chunk for chunk in job.chunks.all() if chunk.status == "failed"]
    assert failed and all(chunk.attempts == 2 for chunk in failed)  # tried, then tried again
    assert job.status == "partial" and job.chunks_failed == len(failed)
    error = job.errors[slow_family.FAILING_METRIC]
    for chunk in failed:
        assert f"chunk {chunk.index} (test-failing, {chunk.group}" in error
    assert "the test family refuses a poisoned caption" in error
    # Every item outside the failed chunks was stored.
    failed_keys = {item["key"] for chunk in failed for item in chunk.items}
    done_keys = {item["key"] for chunk in job.chunks.filter(status="done") for item in chunk.items}
    assert done_keys and not failed_keys & done_keys
    assert set(ScoreResult.objects.filter(job=job).values_list("item_key", flat=True)) == done_keys


@pytest.mark.django_db
def test_cancelling_a_job_stops_the_chunks_not_yet_started(table_study):
    job = score_job_create(study=table_study, metrics=EDIT[:1], enqueue=False)
    ScoreJob.objects.filter(pk=job.pk).update(status="running", task_id="t")
    ScoreChunk.objects.create(job=job, index=0, family="edit", group="overview",
                              metrics=EDIT[:1], version="edit-1", items=[], item_count=0)
    ScoreJob.objects.filter(pk=job.pk).update(chunks_total=1)
    assert score_job_cancel(job_id=job.pk)
    from scoring.chunks import score_chunk_run

    assert score_chunk_run(chunk_id=job.chunks.get().pk) == "cancelled"
    job.refresh_from_db()
    assert (job.status, job.chunks.get().status) == ("cancelled", "cancelled")
    assert not score_job_cancel(job_id=job.pk)  # a finished job stays as it ended


# --------------------------------------------------------------------------- real workers




@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
@pytest.mark.postgres
def test_two_workers_store_exactly_what_one_in_process_run_stores(
    start_worker, table_study, settings
):
    settings.SCORING_STUDY_CHUNK_ITEMS = dict(
        entry.split("=") for entry in SMALL_CHUNKS.split(","))
    settings.SCORING_STUDY_CHUNK_ITEMS = {
        key: int(value) for key, value in settings.SCORING_STUDY_CHUNK_ITEMS.items()}
    metrics = EDIT + REFERENCE + EMBEDDING
    here = run_here(score_job_create(study=table_study, metrics=metrics, judges=["e5-small"],
                                     enqueue=False))
    assert here.status == "done", here.errors
    expected = stored(table_study)
    ScoreResult.objects.all().delete()
    # The workers compute everything themselves: nothing from the in-process run's cache.
    SharedCacheEntry.objects.all().delete()

    env = {"SCORING_STUDY_CHUNK_ITEMS": SMALL_CHUNKS}
    workers = [start_worker(**env), start_worker(**env)]
    job = score_job_create(study=table_study, metrics=metrics, judges=["e5-small"])
    wait_for(lambda: ScoreJob.objects.get(pk=job.pk).finished, workers=workers, seconds=600,
             what="the study job")
    job.refresh_from_db()
    assert job.status == "done", job.errors
    assert job.chunks_total == here.chunks_total > 10
    assert job.chunks_done == job.chunks_total
    assert stored(table_study) == expected
    ran_on = set(job.chunks.values_list("worker", flat=True))
    assert {name.rsplit(":", 1)[1] for name in ran_on} == {str(w.pid) for w in workers}


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
@pytest.mark.postgres
def test_with_queues_each_familys_chunks_reach_only_its_workers(start_worker, table_study):
    env = {"SCORING_QUEUE_CPU": "cpu", "SCORING_QUEUE_EMBED": "embed",
           "SCORING_STUDY_CHUNK_ITEMS": SMALL_CHUNKS}
    cpu = start_worker(queues="redline,cpu", **env)
    embed = start_worker(queues="embed", **env)
    job = score_job_create(study=table_study, metrics=EDIT[:1] + ["bleu4", "cospar"],
                           judges=["e5-small"])
    wait_for(lambda: ScoreJob.objects.get(pk=job.pk).finished, workers=[cpu, embed],
             seconds=600, what="the study job")
    job.refresh_from_db()
    assert job.status == "done", job.errors
    where: dict[str, set[str]] = {}
    for family, queue, worker in job.chunks.values_list("family", "queue", "worker"):
        where.setdefault(f"{family}@{queue}", set()).add(worker.rsplit(":", 1)[1])
    assert where == {
        "edit@cpu": {str(cpu.pid)}, "reference@cpu": {str(cpu.pid)},
        "embedding@embed": {str(embed.pid)},
    }


# --------------------------------------------------------------------------- live scores


@pytest.mark.django_db
def test_a_new_final_verdict_queues_one_debounced_rescoring_of_its_clip(
    table_study, personas, settings, monkeypatch, django_capture_on_commit_callbacks
):
    from scoring.freshness import scores_freshness
    from scoring.services import score_clip_live

    metrics = EDIT[:1] + ["bleu4"]
    assert scores_freshness(table_study).families == {}  # never scored as a whole
    run_here(score_job_create(study=table_study, metrics=metrics, enqueue=False))
    fresh = scores_freshness(table_study)
    assert set(fresh.families) == {"edit", "reference"} and fresh.as_of is not None
    assert not fresh.stale and fresh.pending_jobs == 0

    settings.SCORING_ON_FINAL_VERDICT = True
    settings.SCORING_VERDICT_METRICS = EDIT[:1]
    settings.SCORING_LIVE_DELAY_SECONDS = 7
    sent = []
    monkeypatch.setattr("annotation.jobs.job_send", lambda task, **kw: sent.append(kw))
    with django_capture_on_commit_callbacks(execute=True):
        make_final(Annotation.objects.get(caption__model__name="D"), personas)
    live = ScoreJob.objects.get(clip__name="k0")
    assert (live.kind, live.status, live.metrics) == ("study", "queued", metrics)
    assert [kw.get("countdown") for kw in sent] == [None, 7]  # the verdict job, then the clip's
    assert score_clip_live(live.clip) is None  # still queued: the next verdict shares it
    stale = scores_freshness(table_study)
    assert stale.stale and stale.newer_verdicts == 1 and stale.pending_jobs == 2

    monkeypatch.undo()
    ScoreJob.objects.filter(kind="verdict").delete()
    job = run_here(live)
    assert job.progress_total == 32  # only clip k0's stale items (see the test above)
    assert not scores_freshness(table_study).stale


@pytest.mark.django_db
def test_the_profile_page_says_when_scores_are_older_than_the_newest_verdicts(
    table_study, personas, client
):
    metrics = EDIT[:1]
    client.force_login(personas["researcher"])
    page = client.get(f"/studies/{table_study.slug}/profiles/").content.decode()
    assert "never scored as a whole" in page and 'id="scores-stale"' not in page
    run_here(score_job_create(study=table_study, metrics=metrics, enqueue=False))
    page = client.get(f"/studies/{table_study.slug}/profiles/").content.decode()
    assert "Scores as of" in page and "edit: brought up to date" in page
    assert 'id="scores-stale"' not in page and "Nothing pending." in page
    make_final(Annotation.objects.get(caption__model__name="D"), personas)
    page = client.get(f"/studies/{table_study.slug}/profiles/").content.decode()
    assert 'id="scores-stale"' in page and "1 final verdict came after them" in page
