"""A profile exports from a study in any state: every table and figure is produced or marked
"not computable: needs ..." (the export command and the page), never an error."""

from __future__ import annotations

import json
from html import escape
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation.models import Annotation, Caption
from annotation.services.workflow import annotations_assign
from scoring.metrics.analysis.figures import FIGURES
from scoring.metrics.analysis.profile import TABLE_CAPTIONS
from tests.annotation.studybuild import caption_record, captions_add, complete, fake_clip
from tests.conftest import in_setup
from tests.profiles.conftest import approve

pytestmark = pytest.mark.django_db

ACCEPT_ALL = [{"index": i, "verdict": "accept"} for i in range(3)]

#: State -> (clip, model, final overview verdict or None for never reviewed).
STATES = {
    "no verdicts": [("c1", "Alpha", None), ("c1", "Bravo", None)],
    "one model": [("c1", "Alpha", "accept"), ("c2", "Alpha", "reject")],
    "one clip": [("c1", "Alpha", "accept"), ("c1", "Bravo", "reject")],
    "no paired clips": [("c1", "Alpha", "accept"), ("c2", "Bravo", "reject"),
                        ("c2", "Alpha", None)],
    "one annotator, no double annotations": [
        ("c1", "Alpha", "accept"), ("c1", "Bravo", "reject"), ("c2", "Alpha", "reject"),
        ("c2", "Bravo", "accept")],
}
#: What each state cannot support, as the export says it (table -> start of the reason).
EXPECTED = {
    # Table 14 counts generated captions, so it is computed without any verdict.
    "no verdicts": {**dict.fromkeys(TABLE_CAPTIONS, "not computable: needs at least one caption"),
                    "generation": None},
    "one model": {"pairwise_gaps": "not computable: needs at least 2 models",
                  "clip_property_tests": "not computable: needs a clip property",
                  # Each clip has one caption, so nobody met a second caption of a clip.
                  "rejection_by_exposure": "not computable: needs later exposures"},
    "one clip": {"metric_auc": None, "difficulty_penalty": "not computable: needs clips"},
    "no paired clips": {name: "not computable: needs paired clips" for name in (
        "intervention_rate_paired", "mode_incidence_by_model_paired", "correctness",
        "models_failing_per_clip", "pairwise_gaps")},
    "one annotator, no double annotations": {},
}


def build(study, personas, spec):
    clips = sorted({clip for clip, _, _ in spec})
    for clip in clips:
        fake_clip(study, clip)
    captions_add(study, [caption_record(clip, model) for clip, model, _ in spec])
    annotator, reviewer = personas["annotator"], personas["reviewer"]
    # One annotator sees every model of a clip: clip blocks, as a scripted pilot would.
    with in_setup(study):
        annotations_assign(study=study, annotators=[annotator],
                           captions=Caption.objects.filter(clip__study=study).order_by("pk"),
                           design="clip_blocks")
    for clip, model, verdict in spec:
        if verdict is None:
            continue
        annotation = Annotation.objects.get(caption__clip__name=clip, caption__model__name=model)
        overview = ({"verdict": "accept"} if verdict == "accept" else
                    {"verdict": "reject", "text": "A test card.", "modes": ["factual"]})
        approve(complete(annotation, annotator, overview=overview), reviewer)
    return study


def check_manifest(manifest: dict, out, state: str) -> None:
    marked = {t["name"]: t.get("not_computable", "") for t in manifest["tables"]}
    assert list(marked) == list(TABLE_CAPTIONS)
    for name, reason in EXPECTED[state].items():
        if reason:
            assert marked[name].startswith(reason), (state, name, marked[name])
    for table in manifest["tables"]:
        document = json.loads((out / table["json"]).read_text())
        # Produced (rows) or marked, never silently empty.
        assert document["rows"] or document.get("not_computable"), (state, table["name"])
    assert manifest["figures_failed"] == {}
    drawn = {f["name"] for f in manifest["figures"]}
    assert drawn | set(manifest["figures_not_computable"]) == set(FIGURES)
    report = (out / "report.html").read_text()
    for name, reason in manifest["figures_not_computable"].items():
        assert escape(f"Figure {name}: {reason}") in report
    for reason in marked.values():
        if reason:
            assert f'data-not-computable="{escape(reason, quote=True)}"' in report


@pytest.mark.parametrize("state", list(STATES))
def test_the_export_command_produces_or_marks_every_table_and_figure(
        study, personas, tmp_path, state):
    build(study, personas, STATES[state])
    out = tmp_path / "profile"
    call_command("export_profiles", study=study.slug, out=str(out), resamples=20,
                 adjusted_resamples=5, stdout=StringIO())
    check_manifest(json.loads((out / "manifest.json").read_text()), out, state)


@pytest.mark.parametrize("state", ["no verdicts", "one model"])
def test_the_page_exports_every_state_and_shows_what_is_not_computable(
        client, study, personas, django_capture_on_commit_callbacks, state):
    build(study, personas, STATES[state])
    client.force_login(personas["researcher"])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("profile-jobs", args=[study.slug]),
                               {"resamples": 20, "adjusted_resamples": 5, "seed": 0},
                               content_type="application/json")
    assert response.status_code == 202, response.content
    job = client.get(response.json()["url"]).json()
    assert job["state"] == "done", job.get("error")
    for name, reason in EXPECTED[state].items():
        if reason:
            assert job["not_computable"][name].startswith(reason)
        else:
            assert name not in job["not_computable"]
