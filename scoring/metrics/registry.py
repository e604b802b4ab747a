"""The metrics Redline can compute, by name, and one function to compute any set of them.

Each metric belongs to a *family* whose batch scorer computes all requested metrics of that family
for a whole batch at once (reference metrics must see the whole corpus: CIDEr is
corpus-relative; embedding metrics share one encode call). Other packages add families with
:func:`register_family` (the LLMFactsF1 metric lives in ``scoring.metrics.llmfacts``).

A batch is a sequence of :class:`Pair` (or ``(id, candidate, reference_or_references)``
tuples). How each family reads a pair:

- ``edit``: the candidate is the machine original, the *first* reference its human correction;
- ``reference``: the candidate against all its references;
- ``embedding``: the candidate against its *first* reference, with one judge
  (:attr:`ScoringOptions.judge`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scoring.metrics.edits import NEAR_TOTAL_CUT, EditSizing
from scoring.metrics.judges import DEFAULT_JUDGES, JudgeSpec
from scoring.metrics.segment import DEFAULT_LANGUAGE
from scoring.metrics.sentences import DEFAULT_SPLITTER

if TYPE_CHECKING:
    from scoring.metrics.embeddings import Judge


@dataclass(frozen=True)
class Metric:
    """A metric's name, the family that computes it, and what it measures in one line."""

    name: str
    family: str
    description: str


@dataclass(frozen=True)
class Pair:
    """One item to score: a candidate text and its reference text(s)."""

    id: str
    candidate: str
    references: tuple[str, ...]


@dataclass(frozen=True)
class ScoringOptions:
    """Settings shared by the family scorers; ``extra`` carries settings of added families.

    ``judge`` is a judge name, spec or object for the embedding metrics; ``splitter`` names the
    sentence splitter of the sentence-level ones (:data:`scoring.metrics.sentences.SPLITTERS`);
    ``language`` the caption language the edit metrics count words in
    (:mod:`scoring.metrics.segment`).
    """

    judge: str | JudgeSpec | Judge = DEFAULT_JUDGES[0]
    splitter: str = DEFAULT_SPLITTER
    near_total_cut: float = NEAR_TOTAL_CUT
    language: str = DEFAULT_LANGUAGE
    extra: Mapping[str, Any] = field(default_factory=dict)


Scores = dict[str, dict[str, float]]
BatchScorer = Callable[[Sequence[Pair], Sequence[str], ScoringOptions], Scores]


def _score_edits(pairs: Sequence[Pair], names: Sequence[str], options: ScoringOptions) -> Scores:
    """Edit-size metrics of each candidate (original) against its first reference (correction)."""
    scores: Scores = {}
    sizing = EditSizing(language=options.language, near_total_cut=options.near_total_cut)
    for pair in pairs:
        size = sizing.measure(pair.candidate, pair.references[0])
        measures = {"words_changed": float(size.words_changed), "char_similarity": size.char_similarity,
                    "near_total": 1.0 if size.near_total else 0.0}
        scores[pair.id] = {name: measures[name] for name in names if name in measures}
    return scores


def _score_reference(
    pairs: Sequence[Pair], names: Sequence[str], options: ScoringOptions
) -> Scores:
    """Reference-overlap metrics of the whole batch in one corpus run."""
    from scoring.metrics.reference import reference_scores

    result = reference_scores(
        {pair.id: pair.candidate for pair in pairs},
        {pair.id: list(pair.references) for pair in pairs},
        metrics=list(names),
    )
    return result.per_item


def _score_embeddings(
    pairs: Sequence[Pair], names: Sequence[str], options: ScoringOptions
) -> Scores:
    """Embedding metrics of each candidate against its first reference, with one judge."""
    from scoring.metrics.embeddings import score_text_pairs

    results = score_text_pairs([(p.candidate, p.references[0]) for p in pairs], options.judge,
                               options.splitter)
    return {
        pair.id: {name: float(getattr(result, name)) for name in names}
        for pair, result in zip(pairs, results, strict=True)
    }


METRICS: dict[str, Metric] = {
    metric.name: metric
    for metric in (
        Metric("words_changed", "edit", "Words changed by the correction (longer side per block)"),
        Metric("char_similarity", "edit", "Normalised Indel similarity of correction to original"),
        Metric("near_total", "edit", "1 if character similarity is below the near-total cut"),
        Metric("bleu1", "reference", "BLEU-1, COCO caption toolkit, PTB-tokenised"),
        Metric("bleu2", "reference", "BLEU-2, COCO caption toolkit, PTB-tokenised"),
        Metric("bleu3", "reference", "BLEU-3, COCO caption toolkit, PTB-tokenised"),
        Metric("bleu4", "reference", "BLEU-4, COCO caption toolkit, PTB-tokenised"),
        Metric("meteor", "reference", "METEOR 1.5 (needs Java)"),
        Metric("rouge_l", "reference", "ROUGE-L F-measure, beta 1.2"),
        Metric("cider", "reference", "CIDEr-D; corpus-relative, score a whole batch together"),
        Metric("cospar", "embedding", "Cosine of whole-text embeddings (FM-V2T CosPar)"),
        Metric("cossen", "embedding", "Median cosine of greedily paired sentences (FM-V2T)"),
        Metric("coarse", "embedding", "Whole-text cosine (CLIP-CC-Bench coarse)"),
        Metric("fine_precision", "embedding", "Mean best cosine of candidate sentences"),
        Metric("fine_recall", "embedding", "Mean best cosine of reference sentences"),
        Metric("fine_f1", "embedding", "Harmonic mean of fine precision and recall"),
        Metric("hm_cf", "embedding", "Harmonic mean of coarse and fine F1 (CLIP-CC-Bench)"),
    )
}

_SCORERS: dict[str, BatchScorer] = {
    "edit": _score_edits,
    "reference": _score_reference,
    "embedding": _score_embeddings,
}


def register_family(family: str, scorer: BatchScorer, metrics: Iterable[Metric]) -> None:
    """Add (or replace) a family's batch scorer and its metrics; nothing changes on refusal."""
    added = list(metrics)
    for metric in added:
        if metric.family != family:
            raise ValueError(f"metric {metric.name!r} belongs to {metric.family!r}, not {family!r}")
    _SCORERS[family] = scorer
    for metric in added:
        METRICS[metric.name] = metric


def metric_names() -> list[str]:
    """Return every available metric name, in registration order."""
    return list(METRICS)


def as_pair(item: Pair | tuple[str, str, str | Sequence[str]]) -> Pair:
    """Return ``item`` as a :class:`Pair`; a single reference string becomes a 1-tuple."""
    if isinstance(item, Pair):
        return item
    key, candidate, references = item
    if isinstance(references, str):
        return Pair(key, candidate, (references,))
    return Pair(key, candidate, tuple(references))


def compute_metrics(
    items: Sequence[Pair | tuple[str, str, str | Sequence[str]]],
    metrics: Iterable[str] | None = None,
    options: ScoringOptions | None = None,
) -> Scores:
    """Compute the named metrics (all when ``None``) for every item of a batch.

    Returns ``scores[id][metric]`` with ids in batch order and metrics in the order asked.
    Refuses unknown metric names, duplicate ids and items without a reference.
    """
    names = list(metrics) if metrics is not None else metric_names()
    unknown = [name for name in names if name not in METRICS]
    if unknown:
        raise ValueError(f"unknown metrics: {unknown}; available: {metric_names()}")
    pairs = [as_pair(item) for item in items]
    ids = [pair.id for pair in pairs]
    if len(set(ids)) != len(ids):
        raise ValueError("duplicate ids in the batch")
    empty = [pair.id for pair in pairs if not pair.references]
    if empty:
        raise ValueError(f"items without a reference: {empty[:10]}")
    settings = options or ScoringOptions()
    by_family: dict[str, list[str]] = {}
    for name in names:
        by_family.setdefault(METRICS[name].family, []).append(name)
    combined: Scores = {key: {} for key in ids}
    if not pairs:
        return combined
    for family, family_names in by_family.items():
        for key, values in _SCORERS[family](pairs, family_names, settings).items():
            combined[key].update(values)
    return {key: {name: combined[key][name] for name in names} for key in ids}
