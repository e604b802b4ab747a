"""One final caption, whatever happened to it: random small studies, in English and Chinese,
driven through the services with random annotator and QC actions (rejections with corrected
texts, segmentation corrections, a unit sent back and revised, amendments of the overview, of a
window or of the timeline, decisions undone), then read back from everything that shows a final
caption. Each must say what the actions say: the release (Parquet and JSON Lines), the WebVTT
export, the profile's tidy tables, the study bundle and the API.

The expected final caption is worked out here from the actions alone (an oracle independent of
:mod:`scoring.metrics.final`), and each edit size from :func:`scoring.metrics.edits.edit_size`
with the study's language.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field
from datetime import timedelta

import pyarrow.parquet as pq
import pytest
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from annotation.models import Annotation, CandidateModel
from annotation.services.bundles import bundle_export
from annotation.services.studies import membership_grant, study_create
from annotation.services.workflow import (
    annotation_open,
    annotation_submit,
    annotations_assign,
    decision_undo,
    review_amend,
    review_approve,
    review_claim,
    review_return,
)
from scoring.metrics.edits import EditSizing, edit_size
from scoring.metrics.exports import caption_record, vtt_escape, vtt_timestamp, webvtt
from scoring.metrics.final import final_caption, final_kind
from scoring.profiles import corrected_captions, tidy_tables
from scoring.release import release_build
from tests.annotation.studybuild import captions_add, complete, fake_clip, save

pytestmark = pytest.mark.django_db

TEXTS = {
    "en": {
        "overview": "A test card with a counter that counts up.",
        "windows": [("Colour bars and a counter.", "Static frame."), ("The counter keeps running.", "Static frame."),
                    ("The counter reaches five.", "Static frame.")],
        "overview_fix": ["A test card with a clock.", "Bars & tone, then a <counter> to five."],
        "window_fix": ["Window {i}: the counter stops.", "Window {i}: bars & a <beep>."],
        "revised": "Window {i}: looked again, it is a clock.",
        "reviewer": "Window {i}: the reviewer sees four.",
        "whole": "The whole clip: bars, then a counter.",
    },
    "zh": {
        "overview": "一个测试卡，上面有一个向上计数的计数器。",
        "windows": [("彩条和一个计数器。", "固定镜头。"), ("计数器继续运行。", "固定镜头。"),
                    ("计数器数到五。", "固定镜头。")],
        "overview_fix": ["一张测试卡，上面的计数器在慢慢往上数。", "彩条和<哔>声，然后计数器数到五。"],
        "window_fix": ["第{i}段：计数器停了。", "第{i}段：彩条和<哔>声。"],
        "revised": "第{i}段：再看一遍，是一个时钟。",
        "reviewer": "第{i}段：审核员看到的是四。",
        "whole": "整段：彩条，然后是计数器。",
    },
}
TIMES = [(0.0, 2.0), (2.0, 4.0), (4.0, 6.0)]
QC_ACTIONS = ("approve", "amend", "amend_undo_approve", "approve_undo_amend", "return_revise_approve",
              "unreviewed")


@dataclass
class Version:
    """What a pass says, as the test expects it: the overview, each window, the timeline."""

    overview: str
    overview_verdict: str
    windows: list[tuple[str, str, str]]  # (verdict, scene, shot), times never change here
    segmentation: str = "accept"
    timeline: list[dict] = field(default_factory=list)


caption_plan = st.fixed_dictionaries({
    "overview": st.sampled_from([None, 0, 1]),
    "windows": st.lists(st.sampled_from([None, 0, 1]), min_size=3, max_size=3),
    "segmentation": st.booleans(),
    "qc": st.sampled_from(QC_ACTIONS),
    "qc_overview": st.sampled_from(["keep", "accept", "reject"]),
    "qc_window": st.sampled_from([None, 0, 1, 2]),
    "qc_window_accept": st.booleans(),
    "qc_segmentation": st.sampled_from(["keep", "own", "accept"]),
})
study_plan = st.fixed_dictionaries({
    "language": st.sampled_from(["en", "zh"]),
    "clips": st.integers(min_value=1, max_value=2),
    "models": st.integers(min_value=1, max_value=2),
    "captions": st.lists(caption_plan, min_size=4, max_size=4),
})
_serial = itertools.count()


def _undo_time_passes(annotation) -> None:
    """As if the submitter's seconds to undo had passed (the study keeps them long for the
    reviewer's undo steps), so that the submission reaches the review queue."""
    Annotation.objects.filter(pk=annotation.pk).update(undo_until=timezone.now() - timedelta(seconds=1))


def _effective(original: Version, version: Version, index: int) -> tuple[str, str]:
    verdict, scene, shot = version.windows[index]
    return (scene, shot) if verdict == "reject" else original.windows[index][1:]


def _annotate(annotation, annotator, texts, plan) -> Version:
    original = Version(texts["overview"], "accept", [("accept", s, h) for s, h in texts["windows"]])
    overview = ({"verdict": "accept"} if plan["overview"] is None else
                {"verdict": "reject", "text": texts["overview_fix"][plan["overview"]], "modes": ["factual"]})
    windows, judged = [], []
    for i, choice in enumerate(plan["windows"]):
        if choice is None:
            windows.append({"index": i, "verdict": "accept"})
            judged.append(("accept", *texts["windows"][i]))
        else:
            scene = texts["window_fix"][choice].format(i=i)
            windows.append({"index": i, "verdict": "reject", "scene": scene, "modes": ["factual"]})
            judged.append(("reject", scene, texts["windows"][i][1]))
    mine = Version(overview.get("text", texts["overview"]), overview["verdict"], judged)
    segmentation = {"verdict": "accept"}
    if plan["segmentation"]:
        # Seeded from the window pass, as the workspace seeds it, with the first boundary moved.
        timeline = [{"start": s, "end": e, "scene": _effective(original, mine, i)[0],
                     "shot": _effective(original, mine, i)[1]} for i, (s, e) in enumerate(TIMES)]
        timeline[0]["end"] = timeline[1]["start"] = 2.5
        segmentation = {"verdict": "reject", "modes": ["temporal"], "windows": timeline}
        mine.segmentation, mine.timeline = "reject", timeline
    complete(annotation, annotator, overview=overview, windows=windows, segmentation=segmentation)
    _undo_time_passes(annotation)
    return mine


def _amend(annotation, reviewer, texts, plan, original: Version, mine: Version) -> Version:
    changes: dict = {}
    theirs = Version(mine.overview, mine.overview_verdict, list(mine.windows), mine.segmentation,
                     [dict(cue) for cue in mine.timeline])
    if plan["qc_overview"] == "accept":
        changes["overview"] = {"verdict": "accept"}
        theirs.overview, theirs.overview_verdict = original.overview, "accept"
    elif plan["qc_overview"] == "reject":
        text = texts["overview_fix"][1] + " " + texts["overview_fix"][0]
        changes["overview"] = {"verdict": "reject", "text": text, "modes": ["factual"]}
        theirs.overview, theirs.overview_verdict = text, "reject"
    j = plan["qc_window"]
    if j is not None:
        if plan["qc_window_accept"]:
            changes["windows"] = [{"index": j, "verdict": "accept"}]
            theirs.windows[j] = original.windows[j]
        else:
            scene = texts["reviewer"].format(i=j)
            changes["windows"] = [{"index": j, "verdict": "reject", "scene": scene, "modes": ["factual"]}]
            theirs.windows[j] = ("reject", scene, original.windows[j][2])
    if plan["qc_segmentation"] == "own":
        own = [{"start": 0.0, "end": 6.0, "scene": texts["whole"], "shot": original.windows[0][2]}]
        changes["segmentation"] = {"verdict": "reject", "modes": ["temporal"], "windows": own}
        theirs.segmentation, theirs.timeline = "reject", own
    elif plan["qc_segmentation"] == "accept":
        changes["segmentation"] = {"verdict": "accept"}
        theirs.segmentation, theirs.timeline = "accept", []
    elif j is not None and theirs.segmentation == "reject":
        # The amendment reaches the annotator's timeline where it carries their text for window j.
        before, after = _effective(original, mine, j), _effective(original, theirs, j)
        for cue in theirs.timeline:
            if (cue["scene"], cue["shot"]) == before:
                cue["scene"], cue["shot"] = after
    review_amend(annotation_id=annotation.pk, actor=reviewer, changes=changes)
    return theirs


def _review(annotation, annotator, reviewer, texts, plan, original: Version, mine: Version) -> Version | None:
    """Run the plan's QC action; return the expected final version (None: no final verdict)."""
    action = plan["qc"]
    if action == "unreviewed":
        return None
    review_claim(annotation_id=annotation.pk, actor=reviewer)
    if action == "approve":
        review_approve(annotation_id=annotation.pk, actor=reviewer)
        return mine
    if action == "amend":
        return _amend(annotation, reviewer, texts, plan, original, mine)
    if action == "amend_undo_approve":
        _amend(annotation, reviewer, texts, plan, original, mine)
        decision_undo(annotation_id=annotation.pk, actor=reviewer)
        review_approve(annotation_id=annotation.pk, actor=reviewer)
        return mine
    if action == "approve_undo_amend":
        review_approve(annotation_id=annotation.pk, actor=reviewer)
        decision_undo(annotation_id=annotation.pk, actor=reviewer)
        return _amend(annotation, reviewer, texts, plan, original, mine)
    # return_revise_approve: window 0 goes back, the annotator revises it (the timeline is theirs
    # and stays as they wrote it), the reviewer approves the revision.
    review_return(annotation_id=annotation.pk, actor=reviewer, units=[{"unit": "window:0", "comment": "Again."}])
    current = annotation_open(annotation=Annotation.objects.get(pk=annotation.pk), actor=annotator)
    scene = texts["revised"].format(i=0)
    current = save(current, annotator, windows=[{"index": 0, "verdict": "reject", "scene": scene,
                                                   "modes": ["factual"]}])
    annotation_submit(annotation_id=annotation.pk, actor=annotator, base_version=current.version)
    _undo_time_passes(annotation)
    mine.windows[0] = ("reject", scene, original.windows[0][2])
    review_claim(annotation_id=annotation.pk, actor=reviewer)
    review_approve(annotation_id=annotation.pk, actor=reviewer)
    return mine


def _build(plan, make_user):
    serial = next(_serial)
    language, texts = plan["language"], TEXTS[plan["language"]]
    study = study_create(slug=f"prop-{serial}", name=f"Property {serial}", caption_language=language,
                         undo_seconds=600)
    annotator, reviewer = make_user(f"ann-{serial}"), make_user(f"rev-{serial}")
    membership_grant(study=study, user=annotator, role="annotator")
    membership_grant(study=study, user=reviewer, role="reviewer")
    clips = [f"clip-{c}" for c in range(plan["clips"])]
    models = [f"Model-{m}" for m in range(plan["models"])]
    for clip in clips:
        fake_clip(study, clip)
    captions_add(study, [{"clip": clip, "model": model, "overview": texts["overview"],
                          "windows": [{"start": s, "end": e, "scene": scene, "shot": shot}
                                      for (s, e), (scene, shot) in zip(TIMES, texts["windows"], strict=True)]}
                         for clip in clips for model in models])
    annotations_assign(study=study, annotators=[annotator])
    original = Version(texts["overview"], "accept", [("accept", s, h) for s, h in texts["windows"]])
    expected: dict[tuple[str, str], Version] = {}
    annotations = Annotation.objects.filter(caption__clip__study=study).order_by(
        "caption__clip__name", "caption__model__name")
    for annotation, caption_plan_ in zip(annotations, plan["captions"], strict=False):
        mine = _annotate(annotation, annotator, texts, caption_plan_)
        final = _review(Annotation.objects.get(pk=annotation.pk), annotator, reviewer, texts,
                        caption_plan_, original, mine)
        if final is not None:
            expected[(annotation.caption.clip.name, annotation.caption.model.name)] = final
    return study, reviewer, original, expected


def _cues(vtt: str) -> list[tuple[str, str, list[str]]]:
    """(start, end, text lines) of each cue of a WebVTT file."""
    cues = []
    for block in vtt.split("\n\n"):
        lines = block.strip().split("\n")
        if len(lines) >= 2 and re.fullmatch(r"\d+", lines[0]):
            start, end = lines[1].split(" --> ")
            cues.append((start, end, lines[2:]))
    return cues


@settings(max_examples=8, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(plan=study_plan)
def test_every_view_of_a_final_caption_agrees_with_what_was_done(plan, make_user, tmp_path_factory):
    study, reviewer, original, expected = _build(plan, make_user)
    sizing = EditSizing.of(study)
    shown = {m.alias: m.name for m in CandidateModel.objects.filter(study=study)}
    if not expected:
        return
    out = tmp_path_factory.mktemp("release")
    release_build(study=study, out_dir=out, license="CC-BY-4.0")
    tables = {name: pq.read_table(out / f"{name}.parquet").to_pylist() for name in ("captions", "windows")}
    for name, rows in tables.items():
        lines = (out / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
        assert [json.loads(line) for line in lines] == rows, f"{name}.jsonl and {name}.parquet differ"
    released = {(row["clip"], shown[row["model"]]): row for row in tables["captions"]}
    assert released.keys() == expected.keys()

    profile, profile_windows = tidy_tables(study)
    vtts = {(c.clip, c.model): webvtt(c) for c in corrected_captions(study)}
    bundle = bundle_export(study=study)
    bundle_captions = {(c["clip"], c["model"]): c for c in bundle["captions"]}
    client = APIClient()
    client.force_login(reviewer)

    for key, version in expected.items():
        clip, model = key
        row = released[key]
        final_windows = [(verdict, scene, shot) for verdict, scene, shot in version.windows]
        overview_size = edit_size(original.overview, version.overview, language=study.caption_language,
                                  near_total_cut=study.near_total_cut)
        timeline = version.timeline if version.segmentation == "reject" else [
            {"start": TIMES[i][0], "end": TIMES[i][1], "scene": scene, "shot": shot}
            for i, (_, scene, shot) in enumerate(final_windows)]
        timeline = [{k: float(v) if k in ("start", "end") else v for k, v in cue.items()} for cue in timeline]

        # The release, captions table.
        assert (row["final_overview"], row["overview_verdict"]) == (version.overview, version.overview_verdict)
        assert row["overview_words_changed"] == overview_size.words_changed
        assert row["final_windows"] == timeline
        assert row["segmentation_verdict"] == version.segmentation
        # The release, windows table.
        window_rows = sorted((w for w in tables["windows"] if w["caption_key"] == row["caption_key"]),
                             key=lambda w: w["window_index"])
        for i, w in enumerate(window_rows):
            verdict, scene, shot = final_windows[i]
            size = edit_size(" ".join(original.windows[i][1:]), f"{scene} {shot}",
                             language=study.caption_language, near_total_cut=study.near_total_cut)
            assert (w["verdict"], w["final_scene"], w["final_shot"]) == (verdict, scene, shot)
            assert (w["final_start"], w["final_end"]) == TIMES[i]
            assert w["words_changed"] == size.words_changed
            assert w["char_similarity"] == round(size.char_similarity, 6)
        # WebVTT: one cue per timeline window, its text escaped.
        cues = _cues(vtts[key])
        assert [(s, e) for s, e, _ in cues] == [(vtt_timestamp(c["start"]), vtt_timestamp(c["end"])) for c in timeline]
        assert [lines for _, _, lines in cues] == [[vtt_escape(c["scene"]), vtt_escape(c["shot"])] for c in timeline]
        # The profile's tidy tables.
        tidy = profile[(profile["clip"] == clip) & (profile["model"] == model)].iloc[0]
        assert tidy["overview_words_changed"] == overview_size.words_changed
        assert tidy["overview_final_verdict"] == version.overview_verdict
        tidy_windows = profile_windows[(profile_windows["clip"] == clip) & (profile_windows["model"] == model)]
        for _, tidy_window in tidy_windows.iterrows():
            i = tidy_window["index"]
            verdict, scene, shot = final_windows[i]
            assert tidy_window["final_verdict"] == verdict
            for name, text in (("scene", scene), ("shot", shot)):
                assert tidy_window[f"{name}_words_changed"] == edit_size(
                    original.windows[i][1 if name == "scene" else 2], text,
                    language=study.caption_language).words_changed
        # The bundle: its passes, read by the one function, give the same caption.
        record = next(a for a in bundle["annotations"] if (a["clip"], a["model"]) == key and a["final"])
        kind = final_kind(record["passes"])
        assert record["final"] == kind
        from_bundle = final_caption(
            clip=clip, model=model, original_overview=bundle_captions[key]["overview"],
            original_windows=bundle_captions[key]["windows"], final=record["passes"][kind], final_kind=kind,
            sizing=sizing)
        exported = caption_record(from_bundle)
        assert exported["overview"] == version.overview
        assert exported["timeline"] == timeline
        assert [(w["verdict"], w["scene"], w["shot"]) for w in exported["windows"]] == final_windows
        assert exported["overview_size"]["words_changed"] == overview_size.words_changed
        # The API: the annotation's final caption.
        annotation = Annotation.objects.get(caption__clip__study=study, caption__clip__name=clip,
                                            caption__model__name=model)
        answer = client.get(f"/api/annotations/{annotation.pk}/").json()["final"]
        assert answer["overview"] == version.overview and answer["timeline"] == timeline
        assert [(w["verdict"], w["scene"], w["shot"]) for w in answer["windows"]] == final_windows
        assert answer["overview_size"] == exported["overview_size"]
        assert [w["size"] for w in answer["windows"]] == [w["size"] for w in exported["windows"]]
        assert [w["size"]["words_changed"] for w in answer["windows"]] == [w["words_changed"] for w in window_rows]
