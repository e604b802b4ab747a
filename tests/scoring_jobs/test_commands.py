"""`manage.py score` and `manage.py score_pairs`."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from scoring.models import ScoreJob

pytestmark = pytest.mark.django_db


def run(*args):
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command(*args, stdout=out, stderr=err)
    except CommandError as error:
        error.stdout, error.stderr = out.getvalue(), err.getvalue()
        raise
    return out.getvalue(), err.getvalue()


# --------------------------------------------------------------------------- score


def test_score_with_wait_runs_the_study_job_and_prints_its_progress(approved, fast_scoring):
    out, _ = run("score", "--study", "s1", "--metrics", "words_changed,char_similarity", "--wait")
    assert "Scoring job #" in out
    assert "  1/5 (20%) edit, overview" in out
    assert "  5/5 (100%) edit, windows" in out
    assert out.rstrip().endswith("done: 10 result(s) stored.")
    job = ScoreJob.objects.get()
    assert (job.kind, job.status, job.requested_by) == ("study", "done", None)


def test_score_exits_with_an_error_when_a_metric_failed(approved, fast_scoring):
    with pytest.raises(CommandError, match="partial") as failure:
        run("score", "--study", "s1", "--metrics", "words_changed,llmfacts_f1")
    assert (
        "failed llmfacts_f1: overview, windows: llmfacts_f1 is not configured"
        in failure.value.stderr
    )


def test_score_refuses_unknown_metrics_and_studies(study):
    with pytest.raises(CommandError, match="Unknown metric"):
        run("score", "--study", "s1", "--metrics", "nope")
    with pytest.raises(CommandError, match="No study 'zz'"):
        run("score", "--study", "zz")
    assert not ScoreJob.objects.exists()


# --------------------------------------------------------------------------- score_pairs


def write_lines(path, *lines):
    path.write_text(
        "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n"
    )
    return path


def read_lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_score_pairs_lists_the_metrics():
    out, _ = run("score_pairs", "--metrics", "list")
    names = [line.split()[0] for line in out.splitlines()]
    for name in (
        "words_changed",
        "char_similarity",
        "bleu1",
        "bleu4",
        "meteor",
        "rouge_l",
        "cider",
        "cospar",
        "cossen",
        "coarse",
        "fine_f1",
        "hm_cf",
        "llmfacts_f1",
    ):
        assert name in names
    assert "not configured" in next(
        line for line in out.splitlines() if line.startswith("llmfacts_f1")
    )


def test_score_pairs_writes_one_line_per_pair_with_each_metric(tmp_path):
    pairs = write_lines(
        tmp_path / "pairs.jsonl",
        {"id": "a", "candidate": "A man walks a dog.", "reference": "A man walks a dog."},
        "",
        {"id": 7, "candidate": "A man walks a dog.", "reference": ["A woman walks a dog.", "x"]},
    )
    out = tmp_path / "out.jsonl"
    _, err = run(
        "score_pairs", str(pairs), "--metrics", "words_changed,char_similarity", "--out", str(out)
    )
    assert read_lines(out) == [
        {"id": "a", "words_changed": 0.0, "char_similarity": 1.0},
        {"id": 7, "words_changed": 1.0, "char_similarity": pytest.approx(0.9, abs=0.05)},
    ]
    assert "Wrote 2 line(s)" in err


def test_score_pairs_reports_bad_lines_with_their_numbers_and_scores_nothing(tmp_path):
    pairs = write_lines(
        tmp_path / "pairs.jsonl",
        {"id": 1, "candidate": "a b", "reference": "a c"},
        '{"id": 2, "candidate": "a b",',
        {"id": 3, "candidate": "a b"},
        {"id": 4, "candidate": "a b", "reference": []},
        {"id": 1, "candidate": "a", "reference": "b"},
        ["not", "an", "object"],
    )
    out = tmp_path / "out.jsonl"
    with pytest.raises(CommandError, match="5 bad line") as failure:
        run("score_pairs", str(pairs), "--metrics", "words_changed", "--out", str(out))
    err = failure.value.stderr
    assert f"{pairs}:2: not valid JSON" in err
    assert f"{pairs}:3: missing 'reference'" in err
    assert f"{pairs}:4: 'reference' must be a string or a non-empty list of strings" in err
    assert f"{pairs}:5: id 1 repeats line 1" in err
    assert f"{pairs}:6: expected a JSON object" in err
    assert not out.exists()


def test_score_pairs_skips_bad_lines_when_asked(tmp_path):
    pairs = write_lines(
        tmp_path / "pairs.jsonl",
        "not json",
        {"id": "ok", "candidate": "a b c", "reference": "a b d"},
    )
    out = tmp_path / "out.jsonl"
    _, err = run(
        "score_pairs", str(pairs), "--metrics", "words_changed", "--skip-bad", "--out", str(out)
    )
    assert f"{pairs}:1: not valid JSON" in err and "Skipped 1 bad line(s)." in err
    assert read_lines(out) == [{"id": "ok", "words_changed": 1.0}]


def test_score_pairs_refuses_unknown_metrics(tmp_path):
    with pytest.raises(CommandError, match="Unknown metric.*bleu9"):
        run("score_pairs", str(tmp_path / "x.jsonl"), "--metrics", "bleu9")


def test_score_pairs_keeps_going_when_one_metric_fails(tmp_path):
    pairs = write_lines(tmp_path / "pairs.jsonl", {"id": 1, "candidate": "a b", "reference": "a c"})
    out = tmp_path / "out.jsonl"
    with pytest.raises(CommandError, match="llmfacts_f1: .*not configured"):
        run("score_pairs", str(pairs), "--metrics", "words_changed,llmfacts_f1", "--out", str(out))
    [line] = read_lines(out)
    assert line["words_changed"] == 1.0 and line["llmfacts_f1"] is None
    assert "not configured" in line["errors"]["llmfacts_f1"]


@pytest.mark.slow
def test_score_pairs_scores_reference_lists_as_one_corpus_and_embeddings_per_judge(tmp_path):
    pairs = write_lines(
        tmp_path / "pairs.jsonl",
        {
            "id": "a",
            "candidate": "A man walks a dog on the beach.",
            "reference": ["A man walks his dog on the beach.", "A person and a dog on sand."],
        },
        {
            "id": "b",
            "candidate": "A cat sleeps on a red sofa.",
            "reference": ["A cat is sleeping on a sofa.", "A grey cat naps on a red couch."],
        },
    )
    out = tmp_path / "out.jsonl"
    run(
        "score_pairs",
        str(pairs),
        "--metrics",
        "bleu1,bleu4,cider,cospar",
        "--judges",
        "minilm,e5-small",
        "--out",
        str(out),
    )
    first, second = read_lines(out)
    assert first["bleu1"] > 0.5 and first["cider"] > 0 and second["cider"] > 0
    assert set(first["cospar"]) == {"minilm", "e5-small"}
    assert 0 < first["cospar"]["minilm"] < 1
