"""The metric families as jobs and commands use them: which metrics run by default, each metric's
version, the LLMFactsF1 backend from settings, and one batch call per family that also returns
what a result should keep beside its number (facts and labels, corpus values).

This is the Django side of the pure library in :mod:`scoring.metrics.registry`: it reads settings, and
it registers the ``llmfacts`` family (the library ships LLMFactsF1 without registering it, since
which backend to use is configuration) when the app is ready.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from scoring.metrics.llmfacts import (
    LLMFactsError,
    OpenAIChatBackend,
    ResultCache,
    llmfacts_f1_many,
)
from scoring.metrics.llmfacts.pipeline import method_version
from scoring.metrics.registry import METRICS, Metric, Pair, ScoringOptions, compute_metrics, register_family
from scoring.metrics.segment import DEFAULT_LANGUAGE, SEGMENTED, segmenter
from scoring.metrics.sentences import DEFAULT_SPLITTER

LLMFACTS = "llmfacts"
LLMFACTS_METRIC = Metric(
    "llmfacts_f1", LLMFACTS, "LLMFactsF1: facts extracted and checked by an LLM (FM-V2T)"
)

# Bump a family's version when its numbers change for the same texts: results are stored per
# version, so old and new numbers never mix. Added families default to "1". LLMFactsF1's version
# is the prompt version plus whether the server constrained its answers (metric_version).
FAMILY_VERSIONS: dict[str, str] = {
    "edit": "edit-1",
    # CIDEr-D's idf from the study's captions (one document per clip), not from each run.
    "reference": "coco-caption-1.2-study-idf",
    # 2: sentences by NLTK's Punkt by default (the splitter is appended to the version).
    "embedding": "embedding-2",
}

#: Families whose per-item values depend on the whole batch: scored in one run per corpus.
CORPUS_FAMILIES = frozenset({"reference"})
#: Families computed once per judge.
JUDGED_FAMILIES = frozenset({"embedding"})


class NotConfigured(LLMFactsError):
    """A metric needs configuration that is missing."""


def family_of(metric: str) -> str:
    return METRICS[metric].family


#: Families whose values depend on the sentence splitter: their version names it.
SPLIT_FAMILIES = frozenset({"embedding"})


def metric_version(metric: str, splitter: str = DEFAULT_SPLITTER,
                   language: str = DEFAULT_LANGUAGE) -> str:
    """The version results of ``metric`` are stored under. For LLMFactsF1 this asks the
    configured server (once per process) whether it constrains answers to a schema; embedding
    metrics name their sentence splitter (``embedding-2+punkt``), so that scores split two ways
    never mix; edit metrics of a Chinese or Japanese study name the caption language and its
    word segmenter (``edit-1+zh-rjieba-0.2.2``); spaced languages keep ``edit-1``."""
    family = family_of(metric)
    if family == LLMFACTS:
        return method_version(llmfacts_backend())
    version = FAMILY_VERSIONS.get(family, "1")
    if family == "edit" and language in SEGMENTED:
        return f"{version}+{language}-{segmenter(language)}"
    return f"{version}+{splitter}" if family in SPLIT_FAMILIES else version


_caches_lock = threading.Lock()


def llmfacts_configured() -> bool:
    return bool(settings.LLMFACTS_BASE_URL and settings.LLMFACTS_MODEL)


_backends: dict[tuple[Any, ...], OpenAIChatBackend] = {}


def llmfacts_backend() -> OpenAIChatBackend:
    """The chat backend named by the LLMFACTS_* settings; NotConfigured when they are unset.

    One backend per setting values and process, so that the server is asked once whether it
    constrains its output, not once per batch.
    """
    if not llmfacts_configured():
        raise NotConfigured(
            "llmfacts_f1 is not configured: set LLMFACTS_BASE_URL (an OpenAI-compatible "
            "endpoint, e.g. http://127.0.0.1:8000/v1) and LLMFACTS_MODEL"
        )
    options: dict[str, Any] = {
        "base_url": settings.LLMFACTS_BASE_URL,
        "model": settings.LLMFACTS_MODEL,
        "api_key": settings.LLMFACTS_API_KEY or None,
        "timeout_s": settings.LLMFACTS_TIMEOUT_S,
        "retries": settings.LLMFACTS_RETRIES,
        "max_concurrency": settings.LLMFACTS_CONCURRENCY,
        "structured_output": settings.LLMFACTS_STRUCTURED_OUTPUT,
    }
    key = tuple(sorted(options.items()))
    with _caches_lock:
        if key not in _backends:
            _backends[key] = OpenAIChatBackend(**options)
        return _backends[key]


_caches: dict[str, ResultCache] = {}


def llmfacts_cache() -> ResultCache:
    """Model answers kept on disk, so a job that is run again (or resumed) asks nothing twice."""
    directory = str(settings.LLMFACTS_CACHE_DIR)
    with _caches_lock:
        if directory not in _caches:
            _caches[directory] = ResultCache(directory)
        return _caches[directory]


def judge_or_backend(family: str, judge: str) -> str:
    """What a stored result names as its judge: the judge, the LLM, or '' for neither."""
    if family in JUDGED_FAMILIES:
        return judge
    if family == LLMFACTS:
        return settings.LLMFACTS_MODEL if llmfacts_configured() else ""
    return ""


def verdict_default_metrics() -> list[str]:
    """Scored when a verdict becomes final: edit size, embeddings, and LLMFactsF1 if configured."""
    if settings.SCORING_VERDICT_METRICS:
        return list(settings.SCORING_VERDICT_METRICS)
    names = [name for name, metric in METRICS.items() if metric.family in {"edit", "embedding"}]
    if llmfacts_configured() and LLMFACTS_METRIC.name in METRICS:
        names.append(LLMFACTS_METRIC.name)
    return names


def study_default_metrics() -> list[str]:
    """Scored by a study job: the verdict metrics plus the reference-overlap metrics."""
    reference = [name for name, metric in METRICS.items() if metric.family == "reference"]
    return verdict_default_metrics() + reference


def default_judges() -> list[str]:
    return list(settings.SCORING_JUDGES)


@dataclass
class BatchOutcome:
    """``scores[id][metric]``; ``details[id][metric]`` to store beside a value; ``errors[id]``
    for the items that could not be scored (only families that fail item by item set these)."""

    scores: dict[str, dict[str, float | None]] = field(default_factory=dict)
    details: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)


def finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def score_batch(
    family: str, pairs: Sequence[Pair], metrics: Sequence[str], options: ScoringOptions
) -> BatchOutcome:
    """Score ``metrics`` (all of ``family``) for every pair. Raises when the whole family fails.

    Reference metrics are scored in one run of the toolkit per batch (CIDEr-D's idf from the
    ``idf_documents`` option, else from the batch); LLMFactsF1 keeps facts and labels.
    """
    if not pairs:
        return BatchOutcome()
    if family == "reference":
        return _reference_batch(pairs, metrics, options.extra.get("idf_documents"))
    if family == LLMFACTS:
        return _llmfacts_batch(pairs)
    scores = compute_metrics(list(pairs), list(metrics), options)
    return BatchOutcome(
        scores={
            key: {name: finite(value) for name, value in values.items()}
            for key, values in scores.items()
        }
    )


def _reference_batch(
    pairs: Sequence[Pair], metrics: Sequence[str], idf_documents: Sequence[Sequence[str]] | None
) -> BatchOutcome:
    from scoring.metrics.reference import reference_scores
    from scoring.shared_cache import shared_cache

    result = reference_scores(
        {pair.id: pair.candidate for pair in pairs},
        {pair.id: list(pair.references) for pair in pairs},
        metrics=list(metrics),
        idf_documents=idf_documents,
        cache=shared_cache(),
    )
    outcome = BatchOutcome()
    for key, values in result.per_item.items():
        outcome.scores[key] = {name: finite(value) for name, value in values.items()}
        # Only what the item's own value depends on: a study job scores its items in chunks,
        # and re-scores only the stale ones, so a batch's corpus value would say nothing.
        if idf_documents is not None and "cider" in values:
            outcome.details[key] = {"cider": {"idf_documents": len(idf_documents)}}
    return outcome


def _llmfacts_batch(pairs: Sequence[Pair]) -> BatchOutcome:
    """LLMFactsF1 of each pair, reference (A) against candidate (B), pairs in parallel.

    When every pair fails (the endpoint is down), the family fails with the first error.
    """
    backend = llmfacts_backend()
    results = llmfacts_f1_many(
        [(pair.references[0], pair.candidate) for pair in pairs], backend, cache=llmfacts_cache()
    )
    outcome = BatchOutcome()
    for pair, result in zip(pairs, results, strict=True):
        if isinstance(result, LLMFactsError):
            outcome.errors[pair.id] = str(result)
        else:
            outcome.scores[pair.id] = {LLMFACTS_METRIC.name: result.llmfacts_f1}
            outcome.details[pair.id] = {LLMFACTS_METRIC.name: result.to_dict()}
    if len(outcome.errors) == len(pairs):
        raise LLMFactsError(next(iter(outcome.errors.values())))
    return outcome


def _llmfacts_scorer(
    pairs: Sequence[Pair], names: Sequence[str], options: ScoringOptions
) -> dict[str, dict[str, float]]:
    """The registry's view of LLMFactsF1: every pair scored, or the family fails."""
    outcome = _llmfacts_batch(pairs)
    if outcome.errors:
        key, message = next(iter(outcome.errors.items()))
        raise LLMFactsError(f"{len(outcome.errors)} pair(s) failed; {key}: {message}")
    return {
        key: {name: values[LLMFACTS_METRIC.name] for name in names}
        for key, values in outcome.scores.items()
    }  # type: ignore[misc]


def register_llmfacts_family() -> None:
    """Make ``llmfacts_f1`` a metric of the registry, scored with the settings' backend."""
    register_family(LLMFACTS, _llmfacts_scorer, [LLMFACTS_METRIC])
