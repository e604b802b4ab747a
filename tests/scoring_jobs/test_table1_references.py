"""Table 1's reference sets, as the scoring job builds them on a hand-countable study.

Clip "k" has four captions: A and B accepted, C and D rejected (and corrected). Clip "solo" has
one caption, so it has no reference at all. Every set below is counted by hand.
"""

from __future__ import annotations

import pytest

from annotation.models import Annotation, Caption
from annotation.services.workflow import annotations_assign
from scoring.comparisons import idf_documents, leave_out_items
from scoring.models import ScoreResult
from scoring.services import score_job_create, score_job_run
from tests.annotation.studybuild import caption_record, captions_add, complete, fake_clip
from tests.conftest import in_setup
from tests.profiles.conftest import approve

pytestmark = pytest.mark.django_db

ACCEPT_ALL = [{"index": i, "verdict": "accept"} for i in range(3)]


def fixed(model: str) -> str:
    return f"A test card whose counter {model.lower()} stops at five."


@pytest.fixture
def four_models(study, personas):
    for name in ("k", "solo"):
        fake_clip(study, name)
    records = [caption_record("k", model, words=f"{model.lower()} counter")
               for model in "ABCD"] + [caption_record("solo", "A")]
    captions_add(study, records)
    annotator, reviewer = personas["annotator"], personas["reviewer"]
    with in_setup(study):
        annotations_assign(study=study, annotators=[annotator], design="clip_blocks",
                           captions=Caption.objects.filter(clip__study=study).order_by("pk"))
    for annotation in Annotation.objects.filter(caption__clip__study=study):
        model = annotation.caption.model.name
        rejected = annotation.caption.clip.name == "k" and model in "CD"
        overview = ({"verdict": "reject", "text": fixed(model), "modes": ["factual"]}
                    if rejected else {"verdict": "accept"})
        approve(complete(annotation, annotator, overview=overview, windows=ACCEPT_ALL), reviewer)
    return study


def ids(study):
    return {(c.clip.name, c.model.name): c.pk
            for c in Caption.objects.filter(clip__study=study).select_related("clip", "model")}


def original(model: str) -> str:
    return f"A test card with a {model.lower()} counter that counts up."


def by_key(items):
    return {item.key: item for item in items}


def test_approved_references_are_the_other_captions_final_texts_never_its_own(four_models):
    caption = ids(four_models)
    approved = by_key(leave_out_items(four_models)["approved"])
    assert len(approved) == 4  # the solo clip's caption has no other caption
    a = approved[f"caption:{caption['k', 'A']}:approved"]
    assert a.candidate == original("A")
    assert a.references == (original("B"), fixed("C"), fixed("D"))
    assert a.reference_captions == (caption["k", "B"], caption["k", "C"], caption["k", "D"])
    c = approved[f"caption:{caption['k', 'C']}:approved"]
    assert c.candidate == original("C")  # what the model wrote, not its correction
    assert c.references == (original("A"), original("B"), fixed("D"))


def test_gold_references_are_the_corrections_of_the_other_captions(four_models):
    caption = ids(four_models)
    gold = by_key(leave_out_items(four_models)["gold"])
    assert gold[f"caption:{caption['k', 'A']}:gold"].references == (fixed("C"), fixed("D"))
    # C's own correction is never its reference: only D's is left.
    assert gold[f"caption:{caption['k', 'C']}:gold"].references == (fixed("D"),)
    assert gold[f"caption:{caption['k', 'D']}:gold"].references == (fixed("C"),)
    assert len(gold) == 4


def test_matched_pairs_share_one_reference_set_that_leaves_both_out(four_models):
    caption = ids(four_models)
    groups = leave_out_items(four_models)
    matched = by_key(groups["matched_approved"])
    assert len(matched) == 2 * 4  # pairs (A,C) (A,D) (B,C) (B,D), both sides scored
    a, c = caption["k", "A"], caption["k", "C"]
    good = matched[f"matched:approved:{a}:{c}:{a}"]
    bad = matched[f"matched:approved:{a}:{c}:{c}"]
    assert good.references == bad.references == (original("B"), fixed("D"))
    assert (good.candidate, bad.candidate) == (original("A"), original("C"))
    gold = by_key(groups["matched_gold"])
    assert gold[f"matched:gold:{a}:{c}:{a}"].references == (fixed("D"),)
    assert len(gold) == 2 * 4


def test_cider_idf_documents_are_the_study_captions_one_per_clip(four_models):
    documents = idf_documents(four_models)
    assert sorted(len(document) for document in documents) == [1, 4]
    assert original("C") in next(d for d in documents if len(d) == 4)


@pytest.mark.slow
def test_a_study_job_stores_every_table1_set_and_the_profile_reads_them(four_models):
    from scoring.metrics.analysis.metrics import metric_auc
    from scoring.profiles import matched_table, tidy_tables

    job = score_job_create(study=four_models, metrics=["bleu4", "cider"], enqueue=False)
    assert score_job_run(job_id=job.pk) == "ran"
    job.refresh_from_db()
    assert job.status == "done", job.errors
    counts = {subject: ScoreResult.objects.filter(subject=subject, metric="cider").count()
              for subject in ("caption_vs_approved", "caption_vs_gold", "matched_approved",
                              "matched_gold", "overview")}
    assert counts == {"caption_vs_approved": 4, "caption_vs_gold": 4, "matched_approved": 8,
                      "matched_gold": 8, "overview": 5}
    row = ScoreResult.objects.filter(subject="caption_vs_approved", metric="cider").first()
    assert row.detail["idf_documents"] == 2
    assert row.caption_id not in row.detail["reference_captions"]

    captions, _ = tidy_tables(four_models)
    matched = matched_table(four_models)
    assert len(matched) == 4 * 4  # four pairs x (approved, gold) x (bleu4, cider)
    table = metric_auc(captions, matched=matched, resamples=50).set_index("score")
    assert table.loc["score_approved_cider", ["reference_set", "accepted", "rejected",
                                              "matched_pairs", "matched_clips"]].tolist() == [
        "approved", 2, 2, 4, 1]
    assert table.loc["score_gold_bleu4", ["accepted", "rejected"]].tolist() == [2, 2]
    # The circular "own final text" score is gone: no score column is 1.0 for every accept.
    assert "score_gold_cider" in table.index and table.loc["score_length", "reference_set"] == (
        "control")


def test_a_job_records_its_splitter_and_refuses_an_unknown_one(four_models):
    from annotation.errors import ServiceError

    job = score_job_create(study=four_models, metrics=["hm_cf"], judges=["minilm"],
                           splitter="redline", enqueue=False)
    assert job.splitter == "redline"
    assert score_job_create(study=four_models, metrics=["hm_cf"], enqueue=False).splitter == (
        "punkt")
    with pytest.raises(ServiceError, match="Unknown sentence splitter 'spacy'"):
        score_job_create(study=four_models, metrics=["hm_cf"], splitter="spacy", enqueue=False)


@pytest.mark.slow
def test_stored_embedding_scores_name_their_splitter_in_the_metric_version(four_models):
    for splitter in ("punkt", "redline"):
        job = score_job_create(study=four_models, metrics=["hm_cf"], judges=["minilm"],
                               splitter=splitter, enqueue=False)
        assert score_job_run(job_id=job.pk) == "ran"
    versions = set(ScoreResult.objects.filter(subject="caption_vs_approved", metric="hm_cf")
                   .values_list("metric_version", flat=True))
    assert versions == {"embedding-2+punkt", "embedding-2+redline"}
