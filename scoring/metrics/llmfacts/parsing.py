"""Strict parsing of the model's answers.

An answer is accepted when, after trimming surrounding whitespace, it is exactly one JSON value,
or exactly one fenced code block (```` ```json ... ``` ````) holding one JSON value. Nothing looser:
no JSON picked out of surrounding prose, no Python dictionary syntax, no NaN, no duplicate keys. A
loose parser would quietly score answers the model never meant; a strict one lets the pipeline
ask for a repair, or fail with a message that says what was wrong.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Final, Literal, cast, get_args

Label = Literal["entailment", "contradiction", "neutral"]
LABELS: Final[tuple[Label, ...]] = get_args(Label)

MAX_FACTS: Final = 64
"""The most facts one extraction may list (the paper's longest references give about 40)."""
MAX_FACT_CHARS: Final = 200
"""The longest fact, in characters."""
MAX_REASON_CHARS: Final = 300
"""The longest reason of a label, in characters (the paper's published answers reach 163)."""
# The most characters an answer the schemas allow can take: every string at its limit with
# each character escaped (doubled), plus the JSON around each item with room for indentation.
# A longer answer ran past the schema (a server that does not enforce string lengths) and is
# refused before it is parsed.
MAX_ANSWER_CHARS: Final = MAX_FACTS * (2 * max(MAX_FACT_CHARS, MAX_REASON_CHARS) + 128) + 128

# The whole answer is one fenced block; a language tag such as "json" may follow the fence.
_FENCED = re.compile(r"\A```[A-Za-z0-9_+-]*[ \t]*\n(?P<body>.*?)\n?[ \t]*```\Z", re.DOTALL)


class AnswerSyntaxError(ValueError):
    """The answer is not one JSON value; a repair call may fix it."""


class AnswerSchemaError(ValueError):
    """The answer is valid JSON but not the object the prompt asked for; repair cannot help."""


def _refuse_constant(name: str) -> Any:
    raise AnswerSyntaxError(f"{name} is not JSON")


def _refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise AnswerSyntaxError(f"duplicate key {key!r}")
        result[key] = value
    return result


def parse_json_answer(answer: str) -> Any:
    """Return the JSON value that makes up the whole answer (optionally in one fenced block).

    Raises :class:`AnswerSyntaxError` naming the problem when the answer is anything else.
    """
    stripped = answer.strip()
    if not stripped:
        raise AnswerSyntaxError("the answer is empty")
    if len(stripped) > MAX_ANSWER_CHARS:
        raise AnswerSyntaxError(
            f"the answer is {len(stripped):,} characters long, more than any answer the schema "
            f"allows ({MAX_ANSWER_CHARS:,})")
    fenced = _FENCED.match(stripped)
    body = fenced.group("body") if fenced else stripped
    try:
        return json.loads(
            body,
            parse_constant=_refuse_constant,
            object_pairs_hook=_refuse_duplicate_keys,
        )
    except json.JSONDecodeError as error:
        if error.pos >= len(body.rstrip()) - 1 or error.msg.startswith("Unterminated string"):
            raise AnswerSyntaxError(
                f"the answer is cut short ({error.msg} at character {error.pos} of "
                f"{len(body)}): it ran to the token limit?") from error
        raise AnswerSyntaxError(str(error)) from error


def _object_with_list(value: Any, key: str) -> list[Any]:
    if not isinstance(value, dict):
        raise AnswerSchemaError(f'expected a JSON object with a "{key}" list')
    items = value.get(key)
    if not isinstance(items, list):
        raise AnswerSchemaError(f'expected "{key}" to be a list')
    return items


def parse_facts(answer: str) -> tuple[str, ...]:
    """Return the facts of an extraction answer ``{"facts": [str, ...]}``, in order, trimmed.

    Other keys of the object are ignored. An empty list is valid (a text with no facts). The
    schema's bounds hold: at most :data:`MAX_FACTS` facts of at most :data:`MAX_FACT_CHARS`
    characters each. Raises :class:`AnswerSyntaxError` or :class:`AnswerSchemaError`.
    """
    items = _object_with_list(parse_json_answer(answer), "facts")
    if len(items) > MAX_FACTS:
        raise AnswerSchemaError(f"the answer lists {len(items)} facts; at most {MAX_FACTS}")
    facts: list[str] = []
    for position, item in enumerate(items, start=1):
        if not isinstance(item, str) or not item.strip():
            raise AnswerSchemaError(f"fact {position} is not a non-empty string: {_short(item)}")
        if len(item) > MAX_FACT_CHARS:
            raise AnswerSchemaError(
                f"fact {position} is {len(item)} characters long; at most {MAX_FACT_CHARS}")
        facts.append(item.strip())
    return tuple(facts)


def parse_labels(answer: str, fact_count: int) -> tuple[tuple[Label, str], ...]:
    """Return ``(label, reason)`` for facts 1..``fact_count`` of a checking answer, in fact order.

    The answer must be ``{"labels": [{"fact": int, "reason": str, "label": str}, ...]}`` with
    every fact number from 1 to ``fact_count`` exactly once and every label one of
    :data:`LABELS`, every reason at most :data:`MAX_REASON_CHARS` characters; other keys are
    ignored. Raises :class:`AnswerSyntaxError` or :class:`AnswerSchemaError` naming the first
    problem found.
    """
    items = _object_with_list(parse_json_answer(answer), "labels")
    if len(items) > fact_count:
        raise AnswerSchemaError(f"the answer has {len(items)} labels for {fact_count} facts")
    by_fact: dict[int, tuple[Label, str]] = {}
    for position, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            raise AnswerSchemaError(f"entry {position} of labels is not an object")
        number = item.get("fact")
        # bool is an int subclass; true/false are not fact numbers.
        if not isinstance(number, int) or isinstance(number, bool):
            raise AnswerSchemaError(f'entry {position}: "fact" must be an integer, got {number!r}')
        if not 1 <= number <= fact_count:
            raise AnswerSchemaError(
                f"entry {position}: fact {number} does not exist (there are {fact_count} facts)"
            )
        if number in by_fact:
            raise AnswerSchemaError(f"fact {number} is labelled more than once")
        label = item.get("label")
        if label not in LABELS:
            raise AnswerSchemaError(
                f"fact {number}: label {_short(label)} is not one of {', '.join(LABELS)}"
            )
        reason = item.get("reason")
        if not isinstance(reason, str):
            raise AnswerSchemaError(
                f'fact {number}: "reason" must be a string, got {_short(reason)}')
        if len(reason) > MAX_REASON_CHARS:
            raise AnswerSchemaError(f"fact {number}: the reason is {len(reason)} characters "
                                    f"long; at most {MAX_REASON_CHARS}")
        by_fact[number] = (cast(Label, label), reason.strip())
    missing = [number for number in range(1, fact_count + 1) if number not in by_fact]
    if missing:
        raise AnswerSchemaError(f"no label for fact(s) {_numbers(missing)}")
    return tuple(by_fact[number] for number in range(1, fact_count + 1))


def _numbers(numbers: Sequence[int]) -> str:
    return ", ".join(str(number) for number in numbers)


def _short(value: Any, limit: int = 80) -> str:
    """``repr(value)``, cut to ``limit`` characters (an oversized answer stays readable)."""
    shown = repr(value)
    return shown if len(shown) <= limit else shown[:limit] + "..."
