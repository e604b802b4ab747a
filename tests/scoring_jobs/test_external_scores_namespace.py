"""Imported scores have a namespace of their own: one never takes the place of Redline's own
Table 1 row or leaderboard judge, nor of another source's metric, and a second import of a
metric from a source replaces the first only when asked, saying how many it replaced.

The measured case: importing metric ``bleu4`` with references ``imported`` and direction
``lower`` overwrote Redline's own BLEU-4 row (``score_imported_bleu4``): its direction flipped
and its AUC moved, and the import said only "Stored 5 score(s)".
"""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.models import Caption
from scoring.external_scores import IMPORTED_PREFIX, builtin_names
from scoring.metrics.analysis import failure_profile
from scoring.models import ExternalScore, ScoreResult
from scoring.profiles import tidy_tables
from tests.scoring_jobs.test_table1_references import four_models  # noqa: F401 - a fixture

pytestmark = pytest.mark.django_db

#: Redline's own BLEU-4 against the clip's imported references: the accepted captions (k/A, k/B,
#: solo/A) score higher than the rejected ones (k/C, k/D), so its AUC is 1.
BLEU4 = {("k", "A"): 0.4, ("k", "B"): 0.3, ("k", "C"): 0.1, ("k", "D"): 0.2, ("solo", "A"): 0.5}
#: An outside toolkit's numbers for the same captions, lower is better.
OUTSIDE = {("k", "A"): 9.0, ("k", "B"): 8.0, ("k", "C"): 1.0, ("k", "D"): 2.0, ("solo", "A"): 7.0}


def store_builtin_bleu4(study):
    for caption in Caption.objects.filter(clip__study=study).select_related("clip", "model"):
        ScoreResult.objects.create(
            study=study, caption=caption, subject="caption_vs_reference",
            item_key=f"caption:{caption.pk}:reference", metric="bleu4", metric_version="1",
            value=BLEU4[caption.clip.name, caption.model.name], computed_at=timezone.now())


def lines(values, **extra) -> str:
    return "".join(json.dumps({"clip": c, "model": m, "value": v, **extra}) + "\n"
                   for (c, m), v in values.items())


def run(tmp_path, text, *args) -> str:
    path = tmp_path / "scores.jsonl"
    path.write_text(text, encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("import_scores", str(path), "--study", "s1", *args, stdout=out, stderr=err)
    except CommandError as error:
        error.stderr = err.getvalue()
        raise
    return out.getvalue()


def table1(study):
    from scoring.external_scores import lower_is_better

    captions, windows = tidy_tables(study)
    table = failure_profile(captions, windows, resamples=50, adjusted_resamples=10,
                            lower_accepts=["score_length", *lower_is_better(study)])["metric_auc"]
    return captions, table.set_index("score")


def toolkit(metric="bleu4", source="toolkit", version="1"):
    return ("--metric", metric, "--direction", "lower", "--metric-version", version,
            "--source", source, "--references", "imported")


def test_an_imported_metric_named_like_a_builtin_one_is_refused_and_redlines_row_stays(
        four_models, tmp_path):  # noqa: F811
    store_builtin_bleu4(four_models)
    _, before = table1(four_models)
    with pytest.raises(CommandError, match="nothing was stored") as refused:
        run(tmp_path, lines(OUTSIDE), *toolkit())
    [problem] = refused.value.stderr.splitlines()
    assert problem.endswith(
        "line 1, metric: 'bleu4' is the name of one of Redline's own metrics or judges, whose "
        "Table 1 and leaderboard rows an imported score may not take; name it for what computed "
        "it (e.g. bleu4_toolkit). Every line of this metric is refused.")
    assert not ExternalScore.objects.exists()
    _, after = table1(four_models)
    row = after.loc["score_imported_bleu4"]
    assert (row["direction"], row["auc"]) == ("higher accepts", 1.0)
    assert after.equals(before)


@pytest.mark.parametrize("name", ["minilm", "hm_cf", "words_changed"])
def test_every_builtin_metric_and_judge_name_is_refused(four_models, tmp_path, name):  # noqa: F811
    with pytest.raises(CommandError) as refused:
        run(tmp_path, lines(OUTSIDE), *toolkit(metric=name))
    assert f"metric: {name!r} is the name of one of Redline's own" in refused.value.stderr


def test_an_imported_metric_of_its_own_name_stands_beside_redlines_row(four_models, tmp_path):  # noqa: F811
    store_builtin_bleu4(four_models)
    assert run(tmp_path, lines(OUTSIDE), *toolkit(metric="bleu4_toolkit")) == (
        "Stored 5 score(s) of bleu4_toolkit.\n")
    captions, table = table1(four_models)
    ours, theirs = table.loc["score_imported_bleu4"], table.loc["score_imported_external_bleu4_toolkit"]
    assert (ours["reference_set"], ours["direction"], ours["auc"]) == ("imported", "higher accepts", 1.0)
    # Lower is better: the rejected k/C and k/D have the lowest values, so it points the wrong way.
    assert (theirs["reference_set"], theirs["direction"], theirs["auc"]) == (
        "imported", "lower accepts", 0.0)
    by_caption = captions.set_index(["clip", "model"])
    assert by_caption["score_imported_bleu4"].to_dict() == BLEU4
    assert by_caption["score_imported_external_bleu4_toolkit"].to_dict() == OUTSIDE


def test_no_builtin_column_can_take_an_imported_name():
    """Redline's own columns are score_<set>_<metric>[_<judge>]: none starts as an imported one."""
    from scoring.profiles import REFERENCE_SETS, score_column

    assert not [name for name in builtin_names() if name.startswith("external")]
    for subject in REFERENCE_SETS:
        for name in builtin_names():
            assert not score_column(subject, name).startswith(IMPORTED_PREFIX)
            assert not score_column(subject, name).startswith("score_external_")


def test_another_sources_metric_of_the_same_name_is_refused(four_models, tmp_path):  # noqa: F811
    run(tmp_path, lines(OUTSIDE), *toolkit(metric="facts", source="lab-a"))
    with pytest.raises(CommandError) as refused:
        run(tmp_path, lines({("k", "A"): 1.0}), *toolkit(metric="facts", source="lab-b"))
    assert ("line 1, source: metric 'facts' in this study is scored by source 'lab-a'; a score "
            "from 'lab-b' needs a name of its own (e.g. facts_lab_b)") in refused.value.stderr
    # Two sources in one file: the first line's keeps the name.
    mixed = (lines({("k", "A"): 1.0}, source="x") + lines({("k", "B"): 1.0}, source="y"))
    with pytest.raises(CommandError) as in_file:
        run(tmp_path, mixed, "--metric", "other", "--direction", "higher", "--metric-version", "1")
    assert "line 2, source: metric 'other' in this study is scored by source 'x'" in (
        in_file.value.stderr)
    assert ExternalScore.objects.count() == 5


def test_a_second_import_replaces_only_when_asked_and_says_how_many(four_models, tmp_path):  # noqa: F811
    run(tmp_path, lines(OUTSIDE), *toolkit(metric="vlm", version="1"))
    again = {key: value + 100 for key, value in OUTSIDE.items()}
    with pytest.raises(CommandError) as refused:
        run(tmp_path, lines(again), *toolkit(metric="vlm", version="2"))
    assert refused.value.stderr.count("import with replace to replace it") == 5
    assert sorted(ExternalScore.objects.values_list("value", flat=True)) == sorted(OUTSIDE.values())
    # A caption without a score of it yet is added without asking; nothing is replaced.
    ExternalScore.objects.filter(caption__clip__name="solo").delete()
    assert run(tmp_path, lines({("solo", "A"): 7.0}), *toolkit(metric="vlm")) == (
        "Stored 1 score(s) of vlm.\n")
    # Asked: two captions' scores are replaced, the other three stay.
    part = {("k", "A"): 109.0, ("k", "C"): 101.0}
    assert run(tmp_path, lines(part), *toolkit(metric="vlm", version="2"), "--replace") == (
        "Stored 2 score(s) of vlm, replacing 2.\n")
    values = {(s.caption.clip.name, s.caption.model.name): (s.value, s.version)
              for s in ExternalScore.objects.select_related("caption__clip", "caption__model")}
    assert values == {("k", "A"): (109.0, "2"), ("k", "B"): (8.0, "1"), ("k", "C"): (101.0, "2"),
                      ("k", "D"): (2.0, "1"), ("solo", "A"): (7.0, "1")}


def test_replacing_every_score_of_a_metric_may_correct_its_direction(four_models, tmp_path):  # noqa: F811
    run(tmp_path, lines(OUTSIDE), *toolkit(metric="vlm"))
    higher = ("--metric", "vlm", "--direction", "higher", "--metric-version", "1", "--source",
              "toolkit", "--references", "imported")
    with pytest.raises(CommandError) as partial:  # the three scores kept say lower
        run(tmp_path, lines({("k", "A"): 1.0, ("k", "B"): 1.0}), *higher, "--replace")
    assert "line 1, direction: metric 'vlm' is lower is better" in partial.value.stderr
    assert run(tmp_path, lines(OUTSIDE), *higher, "--replace") == (
        "Stored 5 score(s) of vlm, replacing 5.\n")
    assert set(ExternalScore.objects.values_list("direction", flat=True)) == {"higher"}


def test_the_api_and_the_form_replace_when_asked(four_models, personas, client):  # noqa: F811
    api = APIClient()
    api.force_authenticate(personas["admin"])

    def post(values, **fields):
        upload = io.BytesIO(lines(values).encode())
        upload.name = "scores.jsonl"
        return api.post("/api/studies/s1/scores/import/", {
            "file": upload, "metric": "vlm", "direction": "lower", "version": "1",
            "source": "judge", **fields}, format="multipart")

    assert post(OUTSIDE).json()["replaced"] == 0
    refused = post(OUTSIDE)
    assert refused.status_code == 400 and len(refused.json()["errors"]) == 5
    replaced = post(OUTSIDE, replace="true")
    assert replaced.status_code == 201, replaced.content
    assert (replaced.json()["replaced"], replaced.json()["detail"]) == (
        5, "Stored 5 score(s) of vlm, replacing 5.")
    # The study page's form: its checkbox, sent in the query string as imports.js sends it.
    client.force_login(personas["admin"])
    page = client.get("/studies/s1/").content.decode()
    assert '<input type="checkbox" name="replace">' in page
    upload = io.BytesIO(lines(OUTSIDE).encode())
    upload.name = "scores.jsonl"
    answer = client.post("/api/studies/s1/scores/import/?metric=vlm&direction=lower&version=1"
                         "&source=judge&replace=1", {"file": upload})
    assert answer.status_code == 201 and answer.json()["replaced"] == 5
    assert ExternalScore.objects.count() == 5
