"""An erasure forgets what the shared scoring cache (scoring.shared_cache) computed from the
erased texts: a judge's vectors of their final texts (whole and sentence by sentence, every
splitter) go, so a fresh worker has to encode them again, while the vectors of everybody else's
texts stay; METEOR's pair statistics stored since their work became final go too (their keys
need the Java tokeniser), older ones stay; the LLM's answers about their texts (LLMFactsF1's
cache files) go once the erasure commits. Withdrawing without erasure forgets nothing."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import numpy as np
import pytest

from annotation.models import Annotation
from annotation.rules import workflow
from annotation.services.withdrawal import participation_withdraw
from scoring.comparisons import final_texts
from scoring.families import llmfacts_cache
from scoring.metrics.embeddings import CachingJudge, score_text_pairs
from scoring.metrics.llmfacts import ResultCache, extract_facts, llmfacts_f1
from scoring.metrics.reference import METEOR_NAMESPACE
from scoring.metrics.sentences import SPLITTERS, sentences
from scoring.models import SharedCacheEntry
from scoring.shared_cache import DatabaseCache, shared_cache
from tests.annotation.test_withdrawal import SECRET_TEXT, world  # noqa: F401 - the fixture
from tests.scoring.test_llmfacts_pipeline import ScriptedBackend, simple_model

pytestmark = pytest.mark.django_db

NAMESPACE = "embedding toy-judge"


class ToyJudge:
    """A judge whose model is a hash of the text (the cache keeps its vectors as it keeps a real
    model's), remembering which texts it was asked to encode."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.judge = CachingJudge("toy", self._encode, shared=shared_cache, namespace=NAMESPACE)

    def _encode(self, texts: list[str]) -> np.ndarray:
        self.asked.extend(texts)
        return np.array([[float(byte) + 1.0 for byte in hashlib.sha256(text.encode()).digest()[:16]]
                         for text in texts])


def verdict_pairs(annotations) -> list[tuple[str, str]]:
    """The (original, final) text pairs the embedding family scores for these annotations."""
    return [(item.candidate, item.references[0]) for annotation in annotations for item in final_texts(annotation)]


def score_everything(study) -> None:
    """What a study job's embedding chunks do: every approved annotation's pairs, by each splitter."""
    pairs = verdict_pairs(Annotation.objects.filter(caption__clip__study=study, state=workflow.APPROVED))
    judge = ToyJudge().judge
    for splitter in SPLITTERS:
        score_text_pairs(pairs, judge, splitter)


def pieces(texts) -> set[str]:
    """Each text and its sentences by every splitter: everything a judge encodes of them."""
    return set(texts) | {sentence for text in texts for splitter in SPLITTERS for sentence in sentences(text, splitter)}


@pytest.fixture
def scored(world):  # noqa: F811 - the fixture
    """The world's finals scored by the toy judge, and the texts of them that are the leaver's
    own (their corrections) apart from the originals they corrected."""
    study, leaver = world["study"], world["leaver"]
    score_everything(study)
    pairs = verdict_pairs(Annotation.objects.filter(annotator=leaver, state=workflow.APPROVED))
    theirs = {final for original, final in pairs if final != original and final.strip()}
    originals = {original for original, _ in pairs}
    assert any(SECRET_TEXT in text for text in theirs) and "The counter runs." in theirs
    assert SharedCacheEntry.objects.filter(namespace=NAMESPACE).count() >= len(pieces(theirs | originals))
    return {**world, "theirs": theirs, "originals": originals - theirs}


def test_erasure_forgets_the_vectors_of_their_texts_and_keeps_everybody_elses(scored):
    participation_withdraw(study=scored["study"], user=scored["leaver"], erase=True)
    kept = set(SharedCacheEntry.objects.values_list("value", flat=True))
    fresh = ToyJudge()  # a worker started after the erasure
    vectors = fresh.judge.encode(sorted(pieces(scored["theirs"])))
    assert sorted(fresh.asked) == sorted(pieces(scored["theirs"]))  # none came from the cache
    assert not {row.tobytes() for row in vectors} & {bytes(value) for value in kept}
    again = ToyJudge()
    again.judge.encode(sorted(pieces(scored["originals"])))
    assert again.asked == []  # the originals' vectors are still shared


def test_erasure_forgets_meteors_statistics_stored_since_their_work_became_final(scored):
    cache = DatabaseCache()
    cache.put_many(METEOR_NAMESPACE, {"before": b"0.5\tstatistics", "since": b"0.4\tstatistics"})
    long_ago = Annotation.objects.filter(annotator=scored["leaver"]).order_by("pk").first()
    first_audit = long_ago.audit_events.order_by("at").first().at
    SharedCacheEntry.objects.filter(key="before").update(created_at=first_audit - timedelta(days=1))
    participation_withdraw(study=scored["study"], user=scored["leaver"], erase=True)
    assert set(SharedCacheEntry.objects.filter(namespace=METEOR_NAMESPACE).values_list("key", flat=True)) == {
        "before"}


def test_withdrawing_without_erasure_forgets_nothing(scored):
    DatabaseCache().put_many(METEOR_NAMESPACE, {"since": b"0.4\tstatistics"})
    entries = SharedCacheEntry.objects.count()
    participation_withdraw(study=scored["study"], user=scored["leaver"])
    assert SharedCacheEntry.objects.count() == entries


def test_erasure_drops_the_llms_answers_about_their_texts_after_the_commit(
        scored, settings, tmp_path, django_capture_on_commit_callbacks):
    settings.LLMFACTS_CACHE_DIR = tmp_path / "llmfacts"
    cache = llmfacts_cache()
    pairs = verdict_pairs(Annotation.objects.filter(caption__clip__study=scored["study"], state=workflow.APPROVED))
    for original, final in pairs:
        llmfacts_f1(final, original, ScriptedBackend(simple_model), cache=cache)
    files = list(cache.directory.glob("*.json"))
    assert any(SECRET_TEXT in path.read_text() for path in files)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        participation_withdraw(study=scored["study"], user=scored["leaver"], erase=True)
        assert len(list(cache.directory.glob("*.json"))) == len(files)  # nothing before the commit
    assert callbacks
    left = [path.read_text() for path in cache.directory.glob("*.json")]
    assert left and not [text for text in left if SECRET_TEXT in text or "The counter runs" in text]
    asked = ScriptedBackend(simple_model)
    for original in scored["originals"]:
        extract_facts(original, asked, cache=ResultCache(cache.directory))
    assert asked.calls == []  # the originals' facts are still kept
