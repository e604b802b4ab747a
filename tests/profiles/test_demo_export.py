"""The demo study, after a scripted annotate-and-review run, exports a complete report."""

import json
from io import StringIO

import pytest
from django.core.management import call_command

from annotation import demo_content
from scoring.metrics.analysis.figures import FIGURES
from scoring.metrics.analysis.profile import TABLE_CAPTIONS
from tests.profiles.demo_run import demo_reviewed
from tests.profiles.reading import assert_numbers_agree, read_report

pytestmark = pytest.mark.django_db


def test_the_reviewed_demo_study_exports_a_complete_report(tmp_path):
    study = demo_reviewed()
    out = tmp_path / "demo"
    call_command(
        "export_profiles",
        study=study.slug,
        out=str(out),
        resamples=200,
        adjusted_resamples=40,
        stdout=StringIO(),
    )
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["parameters"]["captions with a final verdict"] == len(
        demo_content.DEMO_CAPTIONS
    )
    assert manifest["figures_failed"] == {}
    assert [f["name"] for f in manifest["figures"]] == list(FIGURES)
    report = read_report(out / "report.html")
    assert len(report.images) == len(FIGURES)
    assert set(report.tables) == set(TABLE_CAPTIONS)
    for name in TABLE_CAPTIONS:
        assert_numbers_agree(out, name)
    models = {m["name"] for m in demo_content.DEMO_MODELS}
    for name in (
        "model_profile",
        "correctness",
        "intervention_rate",
        "mode_incidence_by_model",
        "untouched",
        "repair_direction",
        "difficulty_penalty",
        "generation",
    ):
        assert {row["model"][0] for row in report.tables[name]} == models, name
    # Every failure mode planted in the demo is found by the window or overview detector.
    incidence = {row["mode"][0]: row for row in report.tables["mode_incidence"]}
    assert all(
        incidence[mode]["window_k"][0] + incidence[mode]["overview_k"][0] > 0 for mode in incidence
    ), incidence
    pairs = report.tables["pairwise_gaps"]
    assert len(pairs) == 3  # three models, every clip paired
