"""LLMFactsF1 for pairs of texts: extract facts from both, check each side's facts against the
other text, score (METRICS.md section 4).

Every model answer goes through the strict parser. A backend that constrains its output to a
JSON schema (its ``answer_mode`` is not ``"prompt+repair"``) is given the schema of each step
and its answers are final: one that still does not parse fails at once. With any other backend
an answer that is not valid JSON gets one repair call asking the model to fix only the syntax,
then the pipeline fails with an :class:`~scoring.metrics.llmfacts.errors.AnswerError`.

The answer mode is part of the method version (:func:`method_version`): it is in every cache key
and every stored result, so answers written under a schema and free answers never mix.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from .backend import UNCONSTRAINED, ChatBackend
from .cache import ResultCache, cache_key, sha256_text
from .errors import AnswerError, LLMFactsError
from .parsing import (
    LABELS,
    AnswerSchemaError,
    AnswerSyntaxError,
    Label,
    parse_facts,
    parse_labels,
)
from .prompts import (
    PROMPT_VERSION,
    Message,
    checking_messages,
    copied_from_example,
    extraction_messages,
    repair_messages,
)
from .schemas import checking_schema, extraction_schema
from .scores import DirectionCounts, Scores, compute_scores, count_labels

logger = logging.getLogger(__name__)

T = TypeVar("T")

EMPTY_TEXT_REASON = "The text is empty, so it states nothing about this fact."


# Shared by every call that does not bring its own cache, so that within one process a text's
# facts are extracted once per model and prompt version.
_PROCESS_CACHE = ResultCache()


@dataclass(frozen=True)
class FactCheck:
    """One fact of a text, its label against the other text, and the model's reason."""

    fact: str
    label: Label
    reason: str


@dataclass(frozen=True)
class DirectionResult:
    """The facts of one text, each checked against the other text, in extraction order."""

    checks: tuple[FactCheck, ...]

    @property
    def facts(self) -> tuple[str, ...]:
        """The extracted facts."""
        return tuple(check.fact for check in self.checks)

    @property
    def counts(self) -> DirectionCounts:
        """How many facts got each label."""
        return count_labels(check.label for check in self.checks)


@dataclass(frozen=True)
class LLMFactsResult:
    """LLMFactsF1 of texts A and B: the facts and labels of both directions and the numbers.

    ``a_to_b`` holds A's facts checked against B (giving ENT_AB and CONT_AB), ``b_to_a`` the
    reverse. ``scores`` is always :func:`~scoring.metrics.llmfacts.scores.compute_scores` of the two
    directions' counts.
    """

    a_to_b: DirectionResult
    b_to_a: DirectionResult
    scores: Scores
    model_id: str
    prompt_version: str
    answer_mode: str = UNCONSTRAINED
    #: Facts the model copied from the prompt's worked example into text A's or B's facts,
    #: dropped before checking (:func:`~scoring.metrics.llmfacts.prompts.copied_from_example`).
    example_facts_dropped: int = 0

    @property
    def llmfacts_f1(self) -> float:
        """The single number, in [0, 1]."""
        return self.scores.llmfacts_f1

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable record of everything in the result."""

        def direction(result: DirectionResult) -> dict[str, Any]:
            counts = result.counts
            return {
                "checks": [
                    {"fact": c.fact, "label": c.label, "reason": c.reason} for c in result.checks
                ],
                "counts": {
                    "entailment": counts.entailment,
                    "contradiction": counts.contradiction,
                    "neutral": counts.neutral,
                    "total": counts.total,
                },
            }

        return {
            "model_id": self.model_id,
            "prompt_version": self.prompt_version,
            "answer_mode": self.answer_mode,
            "a_to_b": direction(self.a_to_b),
            "b_to_a": direction(self.b_to_a),
            "diagnostics": {"example_facts_dropped": self.example_facts_dropped},
            "scores": {
                "ent_ab": self.scores.ent_ab,
                "cont_ab": self.scores.cont_ab,
                "ent_ba": self.scores.ent_ba,
                "cont_ba": self.scores.cont_ba,
                "ent_f1": self.scores.ent_f1,
                "cont_f1": self.scores.cont_f1,
                "llmfacts_f1": self.scores.llmfacts_f1,
            },
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LLMFactsResult:
        """Rebuild a result from :meth:`to_dict` output; the numbers are recomputed from the
        labels, so a stored record cannot disagree with its own labels."""
        a_to_b = _direction_from_dict(data["a_to_b"])
        b_to_a = _direction_from_dict(data["b_to_a"])
        return cls(
            a_to_b=a_to_b,
            b_to_a=b_to_a,
            scores=compute_scores(a_to_b.counts, b_to_a.counts),
            model_id=data["model_id"],
            prompt_version=data["prompt_version"],
            answer_mode=data.get("answer_mode", UNCONSTRAINED),
            example_facts_dropped=int(
                data.get("diagnostics", {}).get("example_facts_dropped", 0)),
        )


def answer_mode(backend: ChatBackend) -> str:
    """How ``backend`` answers: the ``response_format`` style or decoder that constrains it to a
    schema, or :data:`UNCONSTRAINED`. May ask the server once (see the OpenAI backend)."""
    mode = getattr(backend, "answer_mode", UNCONSTRAINED)
    return str(mode)


def method_version(backend: ChatBackend) -> str:
    """The prompt version and whether answers were schema-constrained, e.g.
    ``"llmfacts-v2+constrained"`` or ``"llmfacts-v2+repair"``: what results are stored under."""
    constrained = answer_mode(backend) != UNCONSTRAINED
    return f"{PROMPT_VERSION}+{'constrained' if constrained else 'repair'}"


def _direction_from_dict(data: dict[str, Any]) -> DirectionResult:
    checks = []
    for item in data["checks"]:
        if item["label"] not in LABELS:
            raise ValueError(f"unknown label {item['label']!r}")
        checks.append(FactCheck(item["fact"], cast(Label, item["label"]), item["reason"]))
    return DirectionResult(tuple(checks))


def extract_facts(
    text: str, backend: ChatBackend, *, cache: ResultCache | None = None
) -> tuple[str, ...]:
    """The atomic facts of ``text``, as the model extracts them (cached), without facts copied
    from the prompt's worked example (:func:`extract_facts_counted` counts those).

    A blank text has no facts and costs no call. Raises :class:`LLMFactsError`.
    ``cache=None`` uses the process-wide in-memory cache.
    """
    return extract_facts_counted(text, backend, cache=cache)[0]


def extract_facts_counted(
    text: str, backend: ChatBackend, *, cache: ResultCache | None = None
) -> tuple[tuple[str, ...], int]:
    """(facts of ``text``, how many facts copied from the prompt's worked example were dropped).

    The model's answer is cached as it was given; the copies are dropped after, so the rule can
    be read off every cached answer.
    """
    if not text.strip():
        return (), 0

    def ask() -> list[str]:
        return list(
            _ask(backend, extraction_messages(text), extraction_schema(), "extraction", parse_facts)
        )

    key = cache_key(backend.model_id, method_version(backend), "extraction", [text])
    answered = _cache(cache).get_or_compute(key, ask)
    kept = tuple(fact for fact in answered if not copied_from_example(fact, text))
    return kept, len(answered) - len(kept)


def forget_texts(texts: Iterable[str], cache: ResultCache) -> int:
    """Drop every answer the cache keeps about ``texts`` (whatever the model and prompt
    version): the facts extracted from them, the checks of other texts' facts against them, and
    the checks of their facts against other texts (keyed by the facts, found from the
    extraction's answer as :func:`check_facts` was given them). How many answers went."""
    wanted = {sha256_text(text): text for text in texts if text.strip()}
    if not wanted:
        return 0
    entries = list(cache.stored())
    facts = set()
    for key, value in entries:
        if key[2:3] == ("extraction",) and key[3:4] and key[3] in wanted and isinstance(value, list):
            kept = [fact for fact in value if isinstance(fact, str) and not copied_from_example(fact, wanted[key[3]])]
            facts.add(sha256_text(json.dumps(kept, ensure_ascii=False)))
    hashes = set(wanted) | facts
    return cache.forget(key for key, _ in entries if hashes.intersection(key[3:]))


def check_facts(
    text: str, facts: Sequence[str], backend: ChatBackend, *, cache: ResultCache | None = None
) -> tuple[FactCheck, ...]:
    """Every fact in ``facts`` labelled against the whole of ``text``, in one call (cached).

    No facts cost no call; against a blank text every fact is neutral without a call.
    Raises :class:`LLMFactsError`. ``cache=None`` uses the process-wide in-memory cache.
    """
    if not facts:
        return ()
    if not text.strip():
        return tuple(FactCheck(fact, "neutral", EMPTY_TEXT_REASON) for fact in facts)

    def ask() -> list[dict[str, str]]:
        labels = _ask(
            backend,
            checking_messages(text, facts),
            checking_schema(len(facts)),
            "checking",
            lambda answer: parse_labels(answer, len(facts)),
        )
        return [{"label": label, "reason": reason} for label, reason in labels]

    facts_json = json.dumps(list(facts), ensure_ascii=False)
    key = cache_key(backend.model_id, method_version(backend), "checking", [text, facts_json])
    labelled = _cache(cache).get_or_compute(key, ask)
    return tuple(
        FactCheck(fact, cast(Label, item["label"]), item["reason"])
        for fact, item in zip(facts, labelled, strict=True)
    )


def llmfacts_f1(
    text_a: str, text_b: str, backend: ChatBackend, *, cache: ResultCache | None = None
) -> LLMFactsResult:
    """LLMFactsF1 of ``text_a`` (usually the reference) and ``text_b`` (usually the prediction).

    Up to four model calls (two extractions, two checks), plus one repair call per answer that
    does not parse when the backend's output is not constrained; cached answers are reused.
    Raises :class:`LLMFactsError`.
    """
    facts_a, copied_a = extract_facts_counted(text_a, backend, cache=cache)
    facts_b, copied_b = extract_facts_counted(text_b, backend, cache=cache)
    a_to_b = DirectionResult(check_facts(text_b, facts_a, backend, cache=cache))
    b_to_a = DirectionResult(check_facts(text_a, facts_b, backend, cache=cache))
    return LLMFactsResult(
        a_to_b=a_to_b,
        b_to_a=b_to_a,
        scores=compute_scores(a_to_b.counts, b_to_a.counts),
        model_id=backend.model_id,
        prompt_version=PROMPT_VERSION,
        answer_mode=answer_mode(backend),
        example_facts_dropped=copied_a + copied_b,
    )


def llmfacts_f1_many(
    pairs: Iterable[tuple[str, str]],
    backend: ChatBackend,
    *,
    cache: ResultCache | None = None,
    max_workers: int | None = None,
) -> list[LLMFactsResult | LLMFactsError]:
    """:func:`llmfacts_f1` for every ``(text_a, text_b)`` pair, in order, pairs in parallel.

    ``max_workers`` (how many pairs, so how many requests, are in flight at once) defaults to
    ``backend.max_concurrency``. A text that appears in several pairs is extracted once: the
    cache makes concurrent askers of one key wait for a single call. A pair that fails yields
    its :class:`LLMFactsError` in its place, so one bad answer does not lose a whole batch.
    """
    pair_list = list(pairs)
    workers = max(1, max_workers or backend.max_concurrency)
    shared = _cache(cache)

    def score(pair: tuple[str, str]) -> LLMFactsResult | LLMFactsError:
        try:
            return llmfacts_f1(pair[0], pair[1], backend, cache=shared)
        except LLMFactsError as error:
            return error

    if workers == 1 or len(pair_list) <= 1:
        return [score(pair) for pair in pair_list]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="llmfacts") as pool:
        return list(pool.map(score, pair_list))


def _cache(cache: ResultCache | None) -> ResultCache:
    return _PROCESS_CACHE if cache is None else cache


def _ask(
    backend: ChatBackend,
    messages: list[Message],
    schema: dict[str, Any],
    stage: str,
    parse: Callable[[str], T],
) -> T:
    """Ask, parse strictly. A constrained backend gets ``schema`` and no second chance; any
    other gets one syntax-only repair call when its answer is not JSON."""
    constrained = answer_mode(backend) != UNCONSTRAINED
    if constrained:
        answer = backend.chat(messages, schema=schema)  # type: ignore[call-arg]
    else:
        answer = backend.chat(messages)
    try:
        return parse(answer)
    except AnswerSyntaxError as error:
        if constrained:
            raise AnswerError(
                f"LLMFactsF1 {stage}: the answer does not parse although the backend "
                f"constrains its output ({error}; cut at the token limit?); "
                f"answer: {_quote(answer)}",
                stage=stage,
                answer=answer,
            ) from error
        syntax_error = error
    except AnswerSchemaError as error:
        raise AnswerError(
            f"LLMFactsF1 {stage}: the answer is JSON but not what was asked for ({error}); "
            f"answer: {_quote(answer)}",
            stage=stage,
            answer=answer,
        ) from error
    logger.info(
        "LLMFactsF1 %s: answer does not parse (%s); asking for a repair", stage, syntax_error
    )
    repaired = backend.chat(repair_messages(answer, str(syntax_error)))
    try:
        return parse(repaired)
    except (AnswerSyntaxError, AnswerSchemaError) as error:
        raise AnswerError(
            f"LLMFactsF1 {stage}: the answer is not valid JSON ({syntax_error}) and the repair "
            f"call did not fix it ({error}); answer: {_quote(answer)}; "
            f"repaired: {_quote(repaired)}",
            stage=stage,
            answer=answer,
            repaired_answer=repaired,
        ) from error


def _quote(text: str, limit: int = 300) -> str:
    shown = text if len(text) <= limit else text[:limit] + "..."
    return repr(shown)
