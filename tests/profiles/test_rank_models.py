"""`manage.py rank_models` and the profile's leaderboard on a hand-countable study."""

from __future__ import annotations

import json
from io import StringIO

import pandas as pd
import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from annotation.models import Caption
from scoring.metrics.analysis.leaderboard import leaderboard
from scoring.models import ScoreResult
from scoring.profiles import final_annotations
from tests.scoring_jobs.test_table1_references import four_models  # noqa: F401 - a fixture

pytestmark = pytest.mark.django_db

#: judge -> model -> HM-CF on clip k. minilm: A > B > C > D; e5: B > A > D > C.
VALUES = {"minilm": {"A": 0.9, "B": 0.8, "C": 0.7, "D": 0.6},
          "e5": {"A": 0.7, "B": 0.75, "C": 0.5, "D": 0.6}}


@pytest.fixture
def scored(four_models):  # noqa: F811 - the fixture imported above
    chosen = {a.caption_id: a for a in final_annotations(four_models)}
    now = timezone.now()
    for judge, per_model in VALUES.items():
        for model, value in per_model.items():
            caption = Caption.objects.get(clip__name="k", model__name=model)
            ScoreResult.objects.create(
                study=four_models, caption=caption, annotation=chosen[caption.pk],
                subject="overview", item_key=f"annotation:{chosen[caption.pk].pk}:overview",
                metric="hm_cf", judge_or_backend=judge, metric_version="embedding-2+punkt",
                value=value, computed_at=now)
    # The solo clip has only model A: it is not a common clip (it counts for A's own mean).
    solo = Caption.objects.get(clip__name="solo")
    ScoreResult.objects.create(
        study=four_models, caption=solo, annotation=chosen[solo.pk], subject="overview",
        item_key=f"annotation:{chosen[solo.pk].pk}:overview", metric="hm_cf",
        judge_or_backend="minilm", metric_version="embedding-2+punkt", value=0.0,
        computed_at=now)
    return four_models


def test_borda_points_ranks_and_agreement_are_counted_by_hand(scored):
    out = StringIO()
    call_command("rank_models", study=scored.slug, format="json", resamples=50, clips="common",
                 stdout=out)
    document = json.loads(out.getvalue())
    rows = {row["model"]: row for row in document["leaderboard"]}
    # 4 models: points 3/2/1/0 per judge. A 3+2, B 2+3, C 1+0, D 0+1.
    assert {m: rows[m]["points"] for m in rows} == {"A": 5, "B": 5, "C": 1, "D": 1}
    # Ties broken by the mean across judges: A 0.8 vs B 0.775; C 0.6 vs D 0.6 -> by name.
    assert [row["model"] for row in document["leaderboard"]] == ["A", "B", "C", "D"]
    assert rows["A"]["mean_minilm"] == pytest.approx(0.9) and rows["B"]["rank_e5"] == 1
    assert rows["A"]["clips"] == 1  # the solo clip lacks B, C and D
    agreement = document["agreement"]
    # tau-b of (A,B,C,D) = (.9,.8,.7,.6) vs (.7,.75,.5,.6): 4 concordant, 2 discordant pairs.
    assert agreement[0]["kendall_tau"] == pytest.approx((4 - 2) / 6)
    assert agreement[-1]["judge_a"] == "all judges" and 0 < agreement[-1]["kendalls_w"] < 1
    # One common clip: every resample would draw it and every rank would hold (it said 1.0 and
    # a zero-width rank interval); a stability needs 2 clips, so it is blank and says why.
    assert all(rows[m]["share_at_rank"] is None for m in rows)
    assert all(rows[m]["rank_ci_low"] is None and rows[m]["rank_ci_high"] is None for m in rows)
    assert rows["A"]["stability_note"] == ("not computable: needs at least 2 clips with this "
                                           "model's scores under every judge (it has 1)")


def test_by_default_each_model_is_averaged_over_its_own_clips(scored):
    out = StringIO()
    call_command("rank_models", study=scored.slug, format="json", resamples=20, stdout=out)
    rows = {row["model"]: row for row in json.loads(out.getvalue())["leaderboard"]}
    # A: minilm over k and solo (0.9 and 0.0), e5 over k alone; the others over k.
    assert rows["A"]["mean_minilm"] == pytest.approx(0.45) and rows["A"]["clips"] == 2
    assert rows["A"]["mean_e5"] == pytest.approx(0.7)
    assert rows["B"]["mean_minilm"] == pytest.approx(0.8) and rows["B"]["clips"] == 1


def test_csv_output_and_a_judge_filter(scored):
    out, err = StringIO(), StringIO()
    call_command("rank_models", study=scored.slug, judges="minilm", resamples=20, stdout=out,
                 stderr=err)
    table = pd.read_csv(StringIO(out.getvalue()))
    assert table["model"].tolist() == ["B", "C", "D", "A"]  # A's own clips: k and solo
    assert "mean_e5" not in table.columns
    assert err.getvalue().startswith("# inter-judge agreement")


def test_a_study_without_judge_scores_says_what_it_needs(four_models):  # noqa: F811
    with pytest.raises(CommandError, match="Not computable: needs stored hm_cf scores"):
        call_command("rank_models", study=four_models.slug, stdout=StringIO())


def test_the_leaderboard_of_one_judge_has_no_pairwise_tau() -> None:
    scores = pd.DataFrame({"clip": ["c"] * 2, "model": ["A", "B"], "judge": ["j"] * 2,
                           "value": [0.2, 0.4]})
    table, agreement = leaderboard(scores, resamples=10)
    assert table["model"].tolist() == ["B", "A"] and table["points"].tolist() == [1, 0]
    assert agreement["judge_a"].tolist() == ["all judges"]


def test_the_profile_export_and_page_carry_the_leaderboard(
        scored, client, personas, django_capture_on_commit_callbacks):
    from django.urls import reverse

    client.force_login(personas["researcher"])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("profile-jobs", args=[scored.slug]),
                               {"resamples": 20, "adjusted_resamples": 5, "seed": 0},
                               content_type="application/json")
    job = client.get(response.json()["url"]).json()
    assert job["state"] == "done", job.get("error")
    rows = job["leaderboard"]["rows"]
    # Own clips (the default): A's minilm mean takes in the solo clip (0.45), so A drops to
    # last under minilm: B 3+3, C 2+0, D 1+1, A 0+2; ties by the mean across judges.
    assert [row["model"] for row in rows] == ["B", "C", "D", "A"]
    assert [row["points"] for row in rows] == [6, 2, 2, 2]
    assert {row["averaged_over"] for row in rows} == {"own clips"}
    assert job["judge_agreement"]["rows"][-1]["judge_a"] == "all judges"
    report = client.get(reverse("profile-job-file", args=[scored.slug, job["job"],
                                                          "report.html"]))
    html = b"".join(report.streaming_content).decode()
    assert 'id="table-leaderboard"' in html
    # Under e5 every model has one clip: no stability anywhere (before: 1.0 and [r, r]).
    assert all(row["share_at_rank"] is None and row["rank_ci_low"] is None for row in rows)
    assert "needs at least 2 clips with this model&#x27;s scores" in html or (
        "needs at least 2 clips with this model's scores" in html)
    csv_file = client.get(reverse("profile-job-file", args=[scored.slug, job["job"],
                                                            "tables/leaderboard.csv"]))
    table = pd.read_csv(StringIO(b"".join(csv_file.streaming_content).decode()))
    assert table[["share_at_rank", "rank_ci_low", "rank_ci_high"]].isna().all().all()
    assert table["stability_note"].str.startswith("not computable: needs at least 2").all()
