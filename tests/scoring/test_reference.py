"""Reference-overlap metrics: the FM-V2T paper's Table 4, CIDEr's corpus dependence, tokenising."""

from __future__ import annotations

import pytest

from scoring.metrics.reference import (
    REFERENCE_METRICS,
    ReferenceScores,
    ptb_tokenize,
    reference_scores,
    rouge_l,
)

# FM-V2T (ACM MM 2025) Table 3: the "Short-25" reference of one clip, two hand edits of it and
# three model outputs. Reconstructed from the seed text, whose extraction lost every r, f, t and
# v; the negation and name-change edits also appear verbatim in the dataset's
# llmfactsf1_example/negation_fact_alignment_example.json.
TABLE_3_REFERENCE = (
    'A small airplane is flying across the sky, with a banner reading "BUSSI SUSI-LEO" '
    "trailing behind it."
)
TABLE_3_CANDIDATES = {
    "Negation": "A small airplane is flying across the sky, with no banner reading "
    '"BUSSI SUSI-LEO" trailing behind it.',
    "NameChange": "A small airplane is flying across the sky, with a banner reading "
    '"BUSSI JOSEF-MARIA" trailing behind it.',
    "InternLM": "A helicopter is flying across a clear blue sky, with a banner reading "
    '"BUSSI SUSHI-LEO" trailing behind it.',
    "Tarsier": "A plane flies across the sky with a sign displaying \u2019BUSSI SUJU-LEON\u2019.",
    "VideoLLaMa": "A small airplane flies over a runway, followed by a helicopter, both seen from "
    "a distance against a gray sky.",
}
# Table 4 of the same paper: METEOR, BLEU-1, BLEU-2, ROUGE-L per row.
TABLE_4 = {
    "Negation": {"meteor": 0.594, "bleu1": 0.941, "bleu2": 0.907, "rouge_l": 0.941},
    "NameChange": {"meteor": 0.518, "bleu1": 0.941, "bleu2": 0.907, "rouge_l": 0.941},
    "InternLM": {"meteor": 0.402, "bleu1": 0.722, "bleu2": 0.618, "rouge_l": 0.747},
    "Tarsier": {"meteor": 0.186, "bleu1": 0.385, "bleu2": 0.304, "rouge_l": 0.468},
    "VideoLLaMa": {"meteor": 0.127, "bleu1": 0.250, "bleu2": 0.162, "rouge_l": 0.219},
}


@pytest.fixture(scope="module")
def table_4_run() -> ReferenceScores:
    return reference_scores(
        TABLE_3_CANDIDATES, {key: [TABLE_3_REFERENCE] for key in TABLE_3_CANDIDATES}
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("row", "metric", "published"),
    [(row, metric, value) for row, values in TABLE_4.items() for metric, value in values.items()],
)
def test_fm_v2t_table_4_reproduces_to_three_decimals(
    table_4_run: ReferenceScores, row: str, metric: str, published: float
) -> None:
    assert round(table_4_run.per_item[row][metric], 3) == pytest.approx(published, abs=1e-9)


@pytest.mark.slow
def test_a_run_reports_every_metric_per_item_and_for_the_corpus(
    table_4_run: ReferenceScores,
) -> None:
    assert list(table_4_run.per_item) == list(TABLE_3_CANDIDATES)
    assert all(list(values) == list(REFERENCE_METRICS) for values in table_4_run.per_item.values())
    assert list(table_4_run.corpus) == list(REFERENCE_METRICS)


@pytest.mark.slow
@pytest.mark.parametrize("metric", ["rouge_l", "cider"])
def test_rouge_and_cider_corpus_values_are_the_mean_of_the_items(
    table_4_run: ReferenceScores, metric: str
) -> None:
    values = [item[metric] for item in table_4_run.per_item.values()]
    assert table_4_run.corpus[metric] == pytest.approx(sum(values) / len(values))


CIDER_CORPUS = {
    "a": ("a man is walking a dog in the park", ["a man walks his dog through a park"]),
    "b": ("a woman is cooking pasta in a kitchen", ["a woman cooks pasta in her kitchen"]),
    "c": ("two children play football on a beach", ["kids are playing soccer on the beach"]),
}


@pytest.fixture(scope="module")
def cider_runs() -> tuple[ReferenceScores, ReferenceScores]:
    together = reference_scores(
        {key: pair[0] for key, pair in CIDER_CORPUS.items()},
        {key: pair[1] for key, pair in CIDER_CORPUS.items()},
        metrics=["cider"],
    )
    alone = reference_scores({"a": CIDER_CORPUS["a"][0]}, {"a": CIDER_CORPUS["a"][1]},
                             metrics=["cider"])
    return together, alone


@pytest.mark.slow
def test_cider_of_an_item_scored_alone_is_zero(
    cider_runs: tuple[ReferenceScores, ReferenceScores],
) -> None:
    _, alone = cider_runs
    assert alone.per_item["a"]["cider"] == 0.0


@pytest.mark.slow
def test_cider_of_the_same_item_in_a_corpus_is_positive(
    cider_runs: tuple[ReferenceScores, ReferenceScores],
) -> None:
    together, _ = cider_runs
    assert together.per_item["a"]["cider"] > 0.1


@pytest.mark.slow
def test_requested_metrics_are_the_only_ones_reported(
    cider_runs: tuple[ReferenceScores, ReferenceScores],
) -> None:
    together, _ = cider_runs
    assert list(together.corpus) == ["cider"]
    assert all(list(values) == ["cider"] for values in together.per_item.values())


TRICKY_TEXTS = [
    'A banner reading "BUSSI SUSI-LEO" (red), isn\'t it?',
    "Curly \u2019quotes\u2019 and \u201cdouble\u201d ones\u2026 done.",
    "   ",
    "",
    "Line one\nline two\r\nline three\u2028end.",
    "Numbers: 3.5 km, $20, 10:30 a.m.; e.g. this -- that.",
    "Sonderzeichen: Straße, Über, café.",
]


@pytest.mark.slow
def test_ptb_tokenize_matches_pycocoevalcaps_own_tokenizer() -> None:
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    # pycocoevalcap's own class only replaces "\n", so give it texts without other line breaks.
    texts = [" ".join(text.split()) for text in TRICKY_TEXTS]
    theirs = PTBTokenizer().tokenize({str(i): [{"caption": t}] for i, t in enumerate(texts)})
    assert ptb_tokenize(TRICKY_TEXTS) == [theirs[str(i)][0] for i in range(len(texts))]


@pytest.mark.slow
def test_ptb_tokenize_lowercases_drops_punctuation_and_keeps_hyphenated_words() -> None:
    assert ptb_tokenize(['A banner reading "BUSSI SUSI-LEO", behind it.', "", "?", "?!"]) == [
        "a banner reading bussi susi-leo behind it",
        "",
        "",
        "?!",  # the toolkit's list of dropped tokens has "?" and "!" but not "?!"
    ]


def test_ptb_tokenize_of_nothing_starts_no_jvm() -> None:
    assert ptb_tokenize([]) == []


def test_reference_scores_refuses_an_unknown_metric() -> None:
    with pytest.raises(ValueError, match="unknown"):
        reference_scores({"a": "x"}, {"a": ["x"]}, metrics=["bleu5"])


@pytest.mark.parametrize("references", [{}, {"a": []}])
def test_reference_scores_refuses_an_item_without_references(
    references: dict[str, list[str]],
) -> None:
    with pytest.raises(ValueError, match="without references"):
        reference_scores({"a": "x"}, references)


def test_reference_scores_of_an_empty_corpus_is_empty() -> None:
    assert reference_scores({}, {}) == ReferenceScores(per_item={}, corpus={})


ROUGE_CASES = [
    ("a man walks a dog", ["a man walks a dog"]),
    ("a man walks a dog", ["a dog walks a man", "the man is walking his dog"]),
    ("", ["a man walks"]),
    ("a man walks", [""]),
    ("completely different words", ["nothing in common here"]),
    ("the the the the", ["the cat sat on the mat"]),
    (" ".join(["the man looks at the woman"] * 200), ["the woman looks at the man " * 30]),
]


@pytest.mark.parametrize(("candidate", "references"), ROUGE_CASES)
def test_rouge_l_equals_the_toolkits_own_rouge(candidate: str, references: list[str]) -> None:
    from pycocoevalcap.rouge.rouge import Rouge

    assert rouge_l(candidate, references) == Rouge().calc_score([candidate], references)


@pytest.mark.slow
def test_meteor_in_several_jvms_equals_the_toolkits_own_meteor() -> None:
    from pycocoevalcap.meteor.meteor import Meteor

    texts = {
        f"{key}-{copy}": text
        for key, text in TABLE_3_CANDIDATES.items()
        for copy in range(12)  # 60 items: enough for two JVMs of 30
    }
    texts["loop"] = "the man looks at the woman " * 10
    texts["empty"] = ""
    references = {key: [TABLE_3_REFERENCE, "A plane tows a banner across the sky."]
                  for key in texts}
    ours = reference_scores(texts, references, metrics=["meteor"], meteor_workers=2)
    tokens = ptb_tokenize(list(texts.values()) + [TABLE_3_REFERENCE,
                                                  "A plane tows a banner across the sky."])
    gts = {key: tokens[-2:] for key in texts}
    res = {key: [tokens[i]] for i, key in enumerate(texts)}
    meteor = Meteor()
    try:
        corpus, per_item = meteor.compute_score(gts, res)
    finally:
        meteor.meteor_p.kill()
        meteor.meteor_p.wait()
    assert [ours.per_item[key]["meteor"] for key in texts] == per_item
    assert ours.corpus["meteor"] == corpus


CIDER_CANDIDATES = ["a man rides a red bike down the street", "a dog runs on the beach",
                    "two cats sleep"]
CIDER_REFERENCES = [["a man is riding a bike on the road", "the man rides a bicycle"],
                    ["a dog is running on sand near water"],
                    ["cats sleeping on a sofa", "two cats are asleep"]]


def test_cider_d_with_the_reference_sets_as_documents_is_the_toolkits_cider() -> None:
    from pycocoevalcap.cider.cider import Cider

    from scoring.metrics.reference import cider_d

    gts = {str(i): refs for i, refs in enumerate(CIDER_REFERENCES)}
    res = {str(i): [text] for i, text in enumerate(CIDER_CANDIDATES)}
    _, expected = Cider().compute_score(gts, res)
    assert cider_d(CIDER_CANDIDATES, CIDER_REFERENCES, CIDER_REFERENCES) == pytest.approx(
        list(expected), abs=1e-12)


def test_cider_d_with_fixed_documents_does_not_depend_on_what_else_is_scored() -> None:
    from scoring.metrics.reference import cider_d

    documents = [[text, *refs] for text, refs in zip(CIDER_CANDIDATES, CIDER_REFERENCES,
                                                      strict=True)]
    together = cider_d(CIDER_CANDIDATES, CIDER_REFERENCES, documents)
    alone = cider_d(CIDER_CANDIDATES[:1], CIDER_REFERENCES[:1], documents)
    assert alone[0] == pytest.approx(together[0]) and alone[0] > 0


@pytest.mark.slow
def test_meteor_scoring_each_pair_once_equals_the_toolkits_multi_reference_meteor() -> None:
    """Every candidate against sets of the others (each order, a repeated reference, itself):
    the pair-by-pair choice of the best reference gives METEOR's own values, to the last bit."""
    from pycocoevalcap.meteor.meteor import Meteor

    from scoring.metrics import reference

    names = list(TABLE_3_CANDIDATES)
    texts: dict[str, str] = {}
    references: dict[str, list[str]] = {}
    for name in names:
        others = [TABLE_3_CANDIDATES[other] for other in names if other != name]
        for shift in range(len(others)):
            key = f"{name}-{shift}"
            texts[key] = TABLE_3_CANDIDATES[name]
            references[key] = others[shift:] + others[:shift] + [TABLE_3_REFERENCE]
        texts[f"{name}-repeated"] = TABLE_3_CANDIDATES[name]
        references[f"{name}-repeated"] = [others[0], others[0], TABLE_3_CANDIDATES[name]]
    reference.forget_pairs()
    ours = reference_scores(texts, references, metrics=["meteor"], meteor_workers=2)
    flat = list(dict.fromkeys([*texts.values(), TABLE_3_REFERENCE]))
    tokens = dict(zip(flat, ptb_tokenize(flat), strict=True))
    meteor = Meteor()
    try:
        corpus, per_item = meteor.compute_score(
            {key: [tokens[text] for text in references[key]] for key in texts},
            {key: [tokens[text]] for key, text in texts.items()})
    finally:
        meteor.meteor_p.kill()
        meteor.meteor_p.wait()
    assert [ours.per_item[key]["meteor"] for key in texts] == per_item
    assert ours.corpus["meteor"] == corpus


@pytest.mark.slow
def test_meteor_asks_the_jvm_nothing_for_pairs_a_shared_cache_holds() -> None:
    from scoring.metrics import reference
    from scoring.metrics.shared_cache import MemoryCache

    asked: list[int] = []
    original = reference._statistics

    def counting(jvm, items):
        asked.append(len(items))
        return original(jvm, items)

    cache = MemoryCache()
    candidates = {key: text for key, text in TABLE_3_CANDIDATES.items()}
    references = {key: [TABLE_3_REFERENCE, "A plane tows a banner."] for key in candidates}
    reference.forget_pairs()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(reference, "_statistics", counting)
        first = reference_scores(candidates, references, metrics=["meteor"], cache=cache)
        assert sum(asked) == 10 and cache.writes == 10
        # Another process: nothing in memory, the cache shared.
        reference.forget_pairs()
        reference.close_meteor_jvms()
        asked.clear()
        second = reference_scores(candidates, references, metrics=["meteor"], cache=cache)
    assert asked == []
    assert second == first


def test_meteor_pairs_are_spread_over_jvms_by_their_length() -> None:
    from scoring.metrics.reference import _spread

    long, short = ("word " * 40).strip(), "word"
    pairs = [(long, long), (short, short), (short, short), (long, short), (short, long)]
    parts = _spread(pairs, 2)
    assert sorted(index for part in parts for index in part) == [0, 1, 2, 3, 4]
    # The longest pair alone on one JVM; everything else on the other.
    assert [0] in parts
    assert _spread(pairs, 9) and len(_spread(pairs, 9)) == 5
