"""`manage.py export_profiles`: every table as CSV and JSON, every figure as PNG and SVG, one
report, and the same numbers in all three."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Annotation
from scoring.metrics.analysis.figures import FIGURES
from scoring.metrics.analysis.profile import TABLE_CAPTIONS
from tests.profiles.reading import assert_numbers_agree, read_report

pytestmark = pytest.mark.django_db


@pytest.fixture
def exported(scripted, tmp_path):
    out = StringIO()
    call_command(
        "export_profiles",
        study=scripted.slug,
        out=str(tmp_path / "profile"),
        resamples=40,
        adjusted_resamples=10,
        seed=3,
        stdout=out,
    )
    return tmp_path / "profile", out.getvalue()


def test_every_table_figure_and_input_is_written_and_progress_printed(exported):
    out, printed = exported
    manifest = json.loads((out / "manifest.json").read_text())
    assert [table["name"] for table in manifest["tables"]] == list(TABLE_CAPTIONS)
    for name, caption in TABLE_CAPTIONS.items():
        assert (out / "tables" / f"{name}.csv").is_file()
        document = json.loads((out / "tables" / f"{name}.json").read_text())
        assert document["name"] == name and document["caption"] == caption
    assert manifest["figures_failed"] == {}
    assert [figure["name"] for figure in manifest["figures"]] == list(FIGURES)
    for name in FIGURES:
        assert (out / "figures" / f"{name}.png").read_bytes().startswith(b"\x89PNG")
        assert "<svg" in (out / "figures" / f"{name}.svg").read_text()
    assert (out / "tidy" / "captions.csv").read_text().count("\n") == 1 + 5
    assert (out / "tidy" / "windows.csv").read_text().count("\n") == 1 + 15
    assert "table metric_auc" in printed and "figure figure1_intervention_by_threshold" in printed
    assert "report.html" in printed and f"Wrote {len(TABLE_CAPTIONS)} tables" in printed


def test_the_numbers_agree_across_csv_json_and_html_and_match_hand_computed_rates(exported):
    out, _ = exported
    for name in TABLE_CAPTIONS:
        assert_numbers_agree(out, name)
    rows = {row["model"]: row for row in assert_numbers_agree(out, "intervention_rate")}
    # Alpha: c1 rejected with 4 words changed, c2 and c3 accepted. Bravo: both final accepts.
    assert rows["Alpha"]["intervention_ge1_pct"] == pytest.approx(100 / 3)
    assert rows["Alpha"]["intervention_ge6_pct"] == 0
    assert rows["Bravo"]["intervention_ge1_pct"] == 0
    paired = {row["model"]: row for row in assert_numbers_agree(out, "intervention_rate_paired")}
    assert paired["Alpha"]["captions"] == 2 and paired["Alpha"]["intervention_ge1_pct"] == 50
    report = read_report(out / "report.html")
    assert report.captions == TABLE_CAPTIONS
    assert len(report.images) == len(FIGURES)
    assert all(src.startswith("data:image/png;base64,") for src in report.images)
    html = (out / "report.html").read_text()
    assert "<script" not in html and "<link" not in html


def test_an_unknown_study_is_an_error(db, tmp_path):
    with pytest.raises(CommandError, match="No study"):
        call_command("export_profiles", study="nope", out=str(tmp_path), stdout=StringIO())


def test_a_study_without_final_verdicts_exports_every_table_marked_not_computable(study,
                                                                                 tmp_path):
    call_command("export_profiles", study=study.slug, out=str(tmp_path), stdout=StringIO())
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert {t["not_computable"] for t in manifest["tables"]} == {
        "not computable: needs at least one caption with a final verdict"}
    assert manifest["figures"] == [] and set(manifest["figures_not_computable"]) == set(FIGURES)


def test_rejection_by_exposure_is_exported_with_the_hand_counted_rates(scripted, exported):
    out, _ = exported
    rows = {row["model"]: row for row in assert_numbers_agree(out, "rejection_by_exposure")}
    assert list(rows) == ["Bravo", "Alpha", "all models"]  # the profile's model order
    # Five final verdicts, one annotator in clip blocks: c1 and c2 met twice, c3 once; the only
    # final rejection is c1/Alpha's overview.
    pooled = rows["all models"]
    assert (pooled["first_captions"], pooled["later_captions"]) == (3, 2)
    alpha_c1 = Annotation.objects.get(caption__clip__name="c1", caption__model__name="Alpha")
    group = "first" if alpha_c1.exposure == 1 else "later"
    assert pooled[f"{group}_overviews_rejected"] == 1
    assert pooled[f"{group}_overview_reject_pct"] == pytest.approx(
        100 / pooled[f"{group}_captions"])
    assert pooled["first_windows"] + pooled["later_windows"] == 15
    document = json.loads((out / "tables" / "rejection_by_exposure.json").read_text())
    assert "not_computable" not in document or not document["not_computable"]
    assert "later minus first" in document["caption"]
    header = (out / "tidy" / "captions.csv").read_text().splitlines()[0].split(",")
    assert {"queue_position", "exposure"} <= set(header)
