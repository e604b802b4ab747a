"""A Chinese study counts words as Chinese everywhere an edit size is computed: the workspace's
edit-size API, the review risk, the QC amendment's audit, the profile's tidy tables, the scoring
job (whose metric version names the segmenter) and `score_pairs`."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from annotation.models import Annotation, AuditEvent, Caption
from scoring.metrics import edits, segment
from scoring.models import ScoreResult
from scoring.profiles import tidy_tables
from tests.conftest import in_setup
from tests.scoring_jobs.conftest import import_captions, make_clip

pytestmark = pytest.mark.django_db

ORIGINAL = "一个男人在海滩上遛一只棕色的狗。"      # 一个 男人 在 海滩 上 遛 一只 棕色 的 狗。
CORRECTED = "一个女人在海滩上遛一只黑色的狗。"     # two words changed: 男人 -> 女人, 棕色 -> 黑色
SCENE = "一个男人和一只狗在沙滩上。"
SCENE_FIXED = "一个女人和一只狗在沙滩上。"          # one word changed
QC_OVERVIEW = "一个女人在海滩上遛一只黑色的小狗。"  # 狗。 -> 小狗。: one word


@pytest.fixture
def chinese(study, personas):
    from annotation.services.workflow import (
        annotation_open,
        annotation_save,
        annotation_submit,
        annotations_assign,
        overview_lock,
    )

    with in_setup(study):  # the language is frozen once a study runs
        study.caption_language = "zh"
        study.save()
    make_clip(study, "beach")
    import_captions(study, [{"clip": "beach", "model": "m1", "overview": ORIGINAL, "windows": [
        {"start": 0, "end": 3, "scene": SCENE, "shot": "广角镜头。"}]}])
    caption = Caption.objects.get()
    annotator = personas["annotator"]
    annotations_assign(study=study, annotators=[annotator], captions=[caption])
    annotation = annotation_open(annotation=caption.annotations.get(), actor=annotator)

    def save(item, **changes):
        return annotation_save(annotation_id=item.pk, actor=annotator, base_version=item.version,
                               changes=changes)

    annotation = save(annotation, overview={"verdict": "reject", "text": CORRECTED,
                                            "modes": ["factual"]})
    annotation = overview_lock(annotation_id=annotation.pk, actor=annotator,
                               base_version=annotation.version)
    annotation = save(annotation, windows=[{"index": 0, "verdict": "reject", "scene": SCENE_FIXED,
                                            "modes": ["factual"]}],
                      segmentation={"verdict": "accept"})
    return annotation_submit(annotation_id=annotation.pk, actor=annotator,
                             base_version=annotation.version)


def amend(annotation, personas):
    from annotation.services.workflow import review_amend, review_claim

    review_claim(annotation_id=annotation.pk, actor=personas["reviewer"])
    return review_amend(annotation_id=annotation.pk, actor=personas["reviewer"], changes={
        "overview": {"verdict": "reject", "text": QC_OVERVIEW, "modes": ["factual"]}})


def test_the_edit_size_api_counts_the_studys_words(chinese, personas):
    client = APIClient()
    client.force_authenticate(personas["annotator"])
    data = client.post("/api/edit-size/", {"study": "s1", "original": ORIGINAL,
                                           "corrected": CORRECTED}, format="json").json()
    assert (data["language"], data["words_changed"]) == ("zh", 2)
    assert [d["text"] for d in data["diff"] if d["op"] == "insert"] == ["女人", "黑色"]


def test_the_review_risk_counts_chinese_words(chinese):
    annotation = Annotation.objects.get()
    assert edits.words_changed(ORIGINAL, CORRECTED) == 1  # as English, the sentence is one word
    # the overview's share of the risk: words changed over the largest threshold (16)
    assert annotation.risk == pytest.approx(2 / 16, abs=1e-3)


def test_the_qc_amendments_audit_counts_chinese_words(chinese, personas):
    amend(chinese, personas)
    size = AuditEvent.objects.get(action="amend").after["edit_size"]
    assert size["overview"]["words_changed"] == 1


def test_the_tidy_tables_count_chinese_words(chinese, personas):
    amend(chinese, personas)
    captions, windows = tidy_tables(chinese.caption.clip.study)
    row = captions.iloc[0]
    # final (QC) overview against the original: 男人, 棕色, 狗。 replaced
    assert row["overview_words_changed"] == 3
    assert row["score_length"] == 10.0
    assert windows.iloc[0]["scene_words_changed"] == 1
    assert windows.iloc[0]["scene_original_words"] == 8


def test_the_scoring_job_counts_chinese_words_under_a_version_naming_the_segmenter(
        chinese, personas, fast_scoring):
    amend(chinese, personas)
    call_command("score", "--study", "s1", "--metrics", "words_changed", "--wait",
                 stdout=io.StringIO(), stderr=io.StringIO())
    result = ScoreResult.objects.get(subject="overview", metric="words_changed")
    assert result.value == 3.0
    assert result.metric_version == f"edit-1+zh-{segment.segmenter('zh')}"


def test_score_pairs_takes_the_language_per_pair_and_for_the_run(tmp_path):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("\n".join(json.dumps(line, ensure_ascii=False) for line in [
        {"id": "zh", "candidate": ORIGINAL, "reference": CORRECTED, "language": "zh"},
        {"id": "en", "candidate": ORIGINAL, "reference": CORRECTED, "language": "en"},
        {"id": "run", "candidate": ORIGINAL, "reference": CORRECTED},
    ]) + "\n", encoding="utf-8")

    def scores(*extra):
        out = io.StringIO()
        call_command("score_pairs", str(pairs), "--metrics", "words_changed", *extra,
                     stdout=out, stderr=io.StringIO())
        return {line["id"]: line["words_changed"] for line in map(json.loads, out.getvalue().splitlines())}

    assert scores() == {"zh": 2.0, "en": 1.0, "run": 1.0}
    assert scores("--language", "zh") == {"zh": 2.0, "en": 1.0, "run": 2.0}


def test_score_pairs_refuses_an_unknown_language_naming_the_line(tmp_path):
    from django.core.management import CommandError

    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"id": 1, "candidate": "a", "reference": "b", "language": "fr"}) + "\n")
    err = io.StringIO()
    with pytest.raises(CommandError, match="1 bad line"):
        call_command("score_pairs", str(pairs), "--metrics", "words_changed", stdout=io.StringIO(),
                     stderr=err)
    assert "1: 'language' must be one of en, zh, ja, other, got 'fr'" in err.getvalue()
