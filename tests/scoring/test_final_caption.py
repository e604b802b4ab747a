"""One final caption: the two cases measured from outside (issue 28, items 1 and 2), each
reproduced on a small study through the services, then read back from every file it reaches.

1. A Chinese study's release counted each edit as whitespace words (1 where jieba gives 7).
2. After a reviewer amended a window of a caption whose segmentation the annotator rejected,
   the release's timeline (``final_windows``) kept the annotator's text.
"""

import importlib
import json
import re
from pathlib import Path

import pytest

from annotation.models import Annotation
from annotation.services.studies import membership_grant, study_create
from annotation.services.workflow import annotations_assign, review_amend, review_approve, review_claim
from scoring.metrics import segment
from scoring.metrics.edits import edit_size
from scoring.metrics.exports import webvtt
from scoring.metrics.final import carry_window_amendments
from scoring.profiles import corrected_captions, tidy_tables
from scoring.release import release_build
from tests.annotation.studybuild import captions_add, complete, fake_clip

pytestmark = pytest.mark.django_db

ZH_OVERVIEW = "一个测试卡，上面有一个向上计数的计数器。"
ZH_CORRECTED = "一张测试卡，上面的计数器在慢慢往上数。"
ZH_WINDOWS = [
    {"start": 0, "end": 2, "scene": "彩条和一个计数器。", "shot": "固定镜头。"},
    {"start": 2, "end": 4, "scene": "计数器继续运行。", "shot": "固定镜头。"},
    {"start": 4, "end": 6, "scene": "计数器数到五。", "shot": "固定镜头。"},
]
ZH_SCENE = "计数器停在四，画面变成黑色。"


def _people(study, make_user):
    annotator, reviewer = make_user(f"ann-{study.slug}"), make_user(f"rev-{study.slug}")
    membership_grant(study=study, user=annotator, role="annotator")
    membership_grant(study=study, user=reviewer, role="reviewer")
    return annotator, reviewer


def _jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_chinese_release_counts_jieba_words_as_the_profile_does(make_user, tmp_path):
    study = study_create(slug="zh", name="Chinese study", caption_language="zh")
    annotator, reviewer = _people(study, make_user)
    for name in ("c1", "c2", "c3"):
        fake_clip(study, name)
    captions_add(study, [{"clip": name, "model": "Alpha", "overview": ZH_OVERVIEW, "windows": ZH_WINDOWS}
                         for name in ("c1", "c2", "c3")])
    annotations_assign(study=study, annotators=[annotator])
    for annotation in Annotation.objects.filter(caption__clip__study=study):
        complete(annotation, annotator,
                 overview={"verdict": "reject", "text": ZH_CORRECTED, "modes": ["factual"]},
                 windows=[{"index": 0, "verdict": "accept"}, {"index": 1, "verdict": "accept"},
                          {"index": 2, "verdict": "reject", "scene": ZH_SCENE, "modes": ["factual"]}])
        review_claim(annotation_id=annotation.pk, actor=reviewer)
        review_approve(annotation_id=annotation.pk, actor=reviewer)

    release_build(study=study, out_dir=tmp_path, license="CC-BY-4.0")
    captions, windows = _jsonl(tmp_path / "captions.jsonl"), _jsonl(tmp_path / "windows.jsonl")
    # An independent count: jieba's words, the Levenshtein distance over them.
    expected_overview = edit_size(ZH_OVERVIEW, ZH_CORRECTED, language="zh").words_changed
    expected_window = edit_size("计数器数到五。 固定镜头。", f"{ZH_SCENE} 固定镜头。", language="zh").words_changed
    assert len(segment.words(ZH_OVERVIEW, "zh")) == 10 and expected_overview == 7
    assert expected_window > 1
    assert [row["overview_words_changed"] for row in captions] == [expected_overview] * 3
    assert [row["words_changed"] for row in windows if row["window_index"] == 2] == [expected_window] * 3
    profile, profile_windows = tidy_tables(study)
    assert list(profile["overview_words_changed"]) == [expected_overview] * 3
    changed = profile_windows[profile_windows["index"] == 2]
    assert list(changed["scene_words_changed"]) == [
        edit_size("计数器数到五。", ZH_SCENE, language="zh").words_changed] * 3


@pytest.fixture
def amended(study, make_user):
    """The annotator rejects the segmentation (a timeline seeded from their windows, as the
    workspace seeds it), the reviewer then re-words window 2 only."""
    annotator, reviewer = _people(study, make_user)
    fake_clip(study, "c1")
    captions_add(study, [{"clip": "c1", "model": "Alpha", "overview": "A test card.", "windows": [
        {"start": 0, "end": 2, "scene": "Colour bars.", "shot": "Static frame."},
        {"start": 2, "end": 4, "scene": "A counter runs.", "shot": "Static frame."},
        {"start": 4, "end": 6, "scene": "The counter reaches five.", "shot": "Static frame."}]}])
    annotations_assign(study=study, annotators=[annotator])
    annotation = Annotation.objects.get(caption__clip__study=study)
    complete(annotation, annotator, overview={"verdict": "accept"},
             windows=[{"index": 0, "verdict": "accept"},
                      {"index": 1, "verdict": "reject", "scene": "A counter counts up.", "modes": ["factual"]},
                      {"index": 2, "verdict": "accept"}],
             segmentation={"verdict": "reject", "modes": ["temporal"], "windows": [
                 {"start": 0, "end": 2.5, "scene": "Colour bars.", "shot": "Static frame."},
                 {"start": 2.5, "end": 4, "scene": "A counter counts up.", "shot": "Static frame."},
                 {"start": 4, "end": 6, "scene": "The counter reaches five.", "shot": "Static frame."}]})
    review_claim(annotation_id=annotation.pk, actor=reviewer)
    review_amend(annotation_id=annotation.pk, actor=reviewer, changes={"windows": [
        {"index": 1, "verdict": "reject", "scene": "A counter counts up to four.", "modes": ["factual"]}]})
    return study


def test_an_amended_window_reaches_the_timeline_of_every_file(amended, tmp_path):
    release_build(study=amended, out_dir=tmp_path, license="CC-BY-4.0")
    (caption,), windows = _jsonl(tmp_path / "captions.jsonl"), _jsonl(tmp_path / "windows.jsonl")
    assert windows[1]["final_scene"] == "A counter counts up to four."
    assert caption["reviewer_decision"] == "amended"
    assert [(w["start"], w["end"], w["scene"]) for w in caption["final_windows"]] == [
        (0, 2.5, "Colour bars."), (2.5, 4, "A counter counts up to four."), (4, 6, "The counter reaches five.")]
    (final,) = corrected_captions(amended)
    assert "A counter counts up to four." in webvtt(final)
    assert "A counter counts up." not in webvtt(final)


def test_a_reviewer_who_corrects_the_timeline_keeps_their_own(study, make_user):
    annotator, reviewer = _people(study, make_user)
    fake_clip(study, "c1")
    captions_add(study, [{"clip": "c1", "model": "Alpha", "overview": "A test card.", "windows": [
        {"start": 0, "end": 3, "scene": "Colour bars.", "shot": "Static frame."},
        {"start": 3, "end": 6, "scene": "A counter runs.", "shot": "Static frame."}]}])
    annotations_assign(study=study, annotators=[annotator])
    annotation = Annotation.objects.get(caption__clip__study=study)
    complete(annotation, annotator, overview={"verdict": "accept"},
             windows=[{"index": 0, "verdict": "accept"}, {"index": 1, "verdict": "accept"}],
             segmentation={"verdict": "reject", "modes": ["temporal"], "windows": [
                 {"start": 0, "end": 4, "scene": "Colour bars.", "shot": "Static frame."},
                 {"start": 4, "end": 6, "scene": "A counter runs.", "shot": "Static frame."}]})
    review_claim(annotation_id=annotation.pk, actor=reviewer)
    own = [{"start": 0, "end": 6, "scene": "Bars, then a counter.", "shot": "Static frame."}]
    review_amend(annotation_id=annotation.pk, actor=reviewer, changes={
        "windows": [{"index": 1, "verdict": "reject", "scene": "A counter counts.", "modes": ["factual"]}],
        "segmentation": {"windows": own}})
    (final,) = corrected_captions(study)
    assert [(c.start, c.end, c.scene) for c in final.timeline()] == [(0, 6, "Bars, then a counter.")]


@pytest.mark.parametrize(("cue", "carried"), [
    ({"start": 2, "end": 4, "scene": "old", "shot": "s"}, "new"),      # the annotator's text: carried
    ({"start": 4, "end": 6, "scene": "old", "shot": "s"}, "old"),      # same text elsewhere: kept
    ({"start": 2, "end": 6, "scene": "old and more", "shot": "s"}, "old and more"),  # merged: kept
])
def test_carrying_an_amendment_matches_text_and_span(cue, carried):
    originals = [{"index": 0, "start": 0, "end": 2, "scene": "a", "shot": "s"},
                 {"index": 1, "start": 2, "end": 4, "scene": "b", "shot": "s"}]
    before = [{"index": 1, "verdict": "reject", "start": 2, "end": 4, "scene": "old", "shot": "s"}]
    after = [{"index": 1, "verdict": "reject", "start": 2, "end": 4, "scene": "new", "shot": "s"}]
    (result,) = carry_window_amendments([cue], originals, before, after)
    assert result["scene"] == carried and (result["start"], result["end"]) == (cue["start"], cue["end"])


def test_no_edit_size_of_the_app_counts_words_without_the_study_language():
    """Word counts depend on the language: the app measures through EditSizing.measure (or a
    metric given the study's language), never by calling the word-counting functions bare."""
    root = Path(__file__).resolve().parents[2]
    bare = re.compile(r"\b(edit_size|words_changed)\(")
    found = [f"{path.relative_to(root)}:{number}"
             for package in ("annotation", "scoring", "frontend", "config")
             for path in sorted((root / package).rglob("*.py"))
             if path.name != "edits.py" and "migrations" not in path.parts
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
             if bare.search(line)]
    assert found == []


def test_amendments_stored_before_the_fix_reach_the_timeline_on_migrating(amended):
    from django.apps import apps

    from annotation.models import CorrectionPass

    migration = importlib.import_module("annotation.migrations.0023_amended_windows_reach_timeline")
    annotation = Annotation.objects.get(caption__clip__study=amended)
    mine = annotation.passes.get(kind=CorrectionPass.Kind.ANNOTATOR)
    # As an amendment was stored before: the reviewer's pass kept the annotator's timeline.
    CorrectionPass.objects.filter(annotation=annotation, kind="qc").update(corrected_windows=mine.corrected_windows)
    migration.carry_amendments(apps, None)
    qc = annotation.passes.get(kind=CorrectionPass.Kind.QC)
    assert [w["scene"] for w in qc.corrected_windows] == [
        "Colour bars.", "A counter counts up to four.", "The counter reaches five."]
    assert [w["start"] for w in qc.corrected_windows] == [0, 2.5, 4]
    migration.carry_amendments(apps, None)  # a second run changes nothing
    assert annotation.passes.get(kind=CorrectionPass.Kind.QC).corrected_windows == qc.corrected_windows
