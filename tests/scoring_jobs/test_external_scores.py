"""Scores from elsewhere: `manage.py import_scores` and its API, validated like every import,
shown as Table 1 rows (controls unless they used references) and ranking the leaderboard."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from scoring.models import ExternalScore
from scoring.profiles import tidy_tables
from tests.scoring_jobs.test_table1_references import four_models  # noqa: F401 - a fixture

pytestmark = pytest.mark.django_db

#: Defects a Video-LLM judge found (fewer is better): k/C and k/D were rejected by people.
DEFECTS = {("k", "A"): 0, ("k", "B"): 1, ("k", "C"): 3, ("k", "D"): 2, ("solo", "A"): 0}


def lines(values=DEFECTS, **extra):
    return "\n".join(json.dumps({"clip": c, "model": m, "value": v, **extra})
                     for (c, m), v in values.items()) + "\n"


def run(tmp_path, text, *args):
    path = tmp_path / "scores.jsonl"
    path.write_text(text, encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("import_scores", str(path), "--study", "s1", *args, stdout=out, stderr=err)
    except CommandError as error:
        error.stderr = err.getvalue()
        raise
    return out.getvalue()


JUDGE = ("--metric", "vlm_defects", "--direction", "lower", "--metric-version", "1",
         "--source", "qwen2.5-vl-7b via vLLM")


def test_imported_scores_become_a_control_row_of_table_1(four_models, tmp_path):  # noqa: F811
    from scoring.metrics.analysis import failure_profile

    assert run(tmp_path, lines(), *JUDGE) == "Stored 5 score(s) of vlm_defects.\n"
    captions, windows = tidy_tables(four_models)
    assert captions.set_index(["clip", "model"])["score_external_vlm_defects"].to_dict() == {
        key: float(value) for key, value in DEFECTS.items()}
    table = failure_profile(captions, windows, resamples=50, adjusted_resamples=10,
                            lower_accepts=["score_external_vlm_defects"])["metric_auc"]
    row = table.set_index("score").loc["score_external_vlm_defects"]
    assert (row["reference_set"], row["direction"]) == ("control", "lower accepts")
    assert row["auc"] == 1.0  # every accepted caption has fewer defects than every rejected one


@pytest.mark.parametrize(("text", "problem"), [
    (lines({("k", "Z"): 1}), "line 1, model: the study has no caption of model 'Z' for clip 'k'"),
    (lines({("nope", "A"): 1}), "line 1, clip: the study has no caption of model 'A'"),
    ('{"clip": "k", "model": "A", "value": "three"}\n',
     'line 1, value: must be a finite number, not "three"'),
    ('{"clip": "k", "model": "A", "value": true}\n', "line 1, value: must be a finite number"),
    (lines() + lines({("k", "B"): 5}), "line 6: repeats the score of line 2"),
    ('{"clip": "k", "model": "A", "value": 1, "colour": 2}\n', "line 1, colour: unknown field"),
    ("{oops\n", "line 1: not valid JSON"),
])
def test_a_bad_file_is_refused_naming_the_line_and_nothing_is_stored(four_models, tmp_path,  # noqa: F811
                                                                     text, problem):
    with pytest.raises(CommandError, match="nothing was stored") as refused:
        run(tmp_path, lines() + text if "line 6" not in problem and "line 1" not in problem
            else text, *JUDGE)
    assert problem in refused.value.stderr
    assert not ExternalScore.objects.exists()


def test_a_score_already_stored_or_without_a_direction_is_refused(four_models, tmp_path):  # noqa: F811
    run(tmp_path, lines(), *JUDGE)
    with pytest.raises(CommandError) as again:
        run(tmp_path, lines({("k", "A"): 4}), *JUDGE)
    assert ("line 1: clip 'k', model 'A' already has a score of metric 'vlm_defects' from source "
            "'qwen2.5-vl-7b via vLLM' (version '1'); import with replace to replace it"
            ) in again.value.stderr
    with pytest.raises(CommandError) as undirected:
        run(tmp_path, lines({("k", "A"): 4}), "--metric", "other", "--metric-version", "1",
            "--source", "x")
    assert "line 1, direction: must be higher or lower" in undirected.value.stderr
    assert ExternalScore.objects.count() == 5


def test_the_api_imports_for_study_admins_only(four_models, personas, tmp_path):  # noqa: F811
    def post(user, text):
        client = APIClient()
        client.force_authenticate(personas[user])
        upload = io.BytesIO(text.encode())
        upload.name = "scores.jsonl"
        return client.post("/api/studies/s1/scores/import/", {
            "file": upload, "metric": "vlm_defects", "direction": "lower", "version": "1",
            "source": "judge"}, format="multipart")

    assert post("researcher", lines()).status_code == 403
    bad = post("admin", lines({("k", "Z"): 1}))
    assert bad.status_code == 400 and bad.json()["errors"] == [
        "line 1, model: the study has no caption of model 'Z' for clip 'k'"]
    good = post("admin", lines())
    assert good.status_code == 201
    assert (good.json()["stored"], good.json()["metrics"]) == (5, ["vlm_defects"])


def test_the_study_page_has_the_score_import_form_and_its_query_fields_are_read(
        four_models, personas, client):  # noqa: F811
    client.force_login(personas["admin"])
    page = client.get("/studies/s1/").content.decode()
    assert 'data-endpoint="/api/studies/s1/scores/import/"' in page
    upload = io.BytesIO(lines().encode())
    upload.name = "scores.jsonl"
    # As imports.js sends it: the file in the body, the other fields in the query string.
    answer = client.post("/api/studies/s1/scores/import/?metric=vlm_defects&direction=lower"
                         "&version=1&source=judge", {"file": upload})
    assert answer.status_code == 201, answer.content
    assert answer.json()["detail"] == "Stored 5 score(s) of vlm_defects."


def test_an_imported_judge_joins_the_leaderboard_oriented_by_its_direction(four_models, tmp_path):  # noqa: F811
    run(tmp_path, lines(), *JUDGE)
    out = io.StringIO()
    call_command("rank_models", "--study", "s1", "--external", "vlm_defects", "--format", "json",
                 "--resamples", "20", stdout=out)
    rows = json.loads(out.getvalue())["leaderboard"]
    # Fewer defects first: A (0 over k and solo), B 1, D 2, C 3.
    assert [row["model"] for row in rows] == ["A", "B", "D", "C"]
    assert {row["model"]: row["mean_vlm_defects"] for row in rows}["C"] == 3.0


def test_plan_study_plans_from_the_pilots_verdicts(four_models):  # noqa: F811
    out = io.StringIO()
    call_command("plan_study", "--study", "s1", "--half-width", "20", "--gap", "40",
                 "--simulations", "50", "--format", "json", stdout=out)
    document = json.loads(out.getvalue())
    plan = document["plan"]
    assert [row["model"] for row in plan if row["target"].startswith("rate")] == [
        "A", "B", "C", "D"]
    study = plan[-1]
    assert study["target"] == "study (every target)" and study["clips_needed"] >= 2
    assert document["assumptions"].startswith("New clips are like the pilot's")
    with pytest.raises(CommandError, match="--half-width and --gap must be > 0"):
        call_command("plan_study", "--study", "s1", "--gap", "0", stdout=io.StringIO())
