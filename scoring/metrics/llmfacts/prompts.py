"""The three prompts of LLMFactsF1: fact extraction, fact checking and JSON repair.

The prompts follow the design of FM-V2T (Arzberger et al., MM '25; reference prompts in
FAIRmedia-AT/FM-V2T ``PAPER/LLMFactsF1_prompts/prompts.yaml``) in our own words, and ask for
strict JSON instead of a Python dictionary string.

Any change to the wording or to the answer format changes the scores, so it must come with a new
:data:`PROMPT_VERSION`: the version is part of every cache key and of every stored result.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from string import Template
from typing import Literal, TypedDict

PROMPT_VERSION = "llmfacts-v2"
"""Identifies the wording and answer format of all three prompts below."""


class Message(TypedDict):
    """One chat message, as OpenAI-compatible chat-completion APIs and chat templates take it."""

    role: Literal["system", "user", "assistant"]
    content: str


# The rules go in the system message and one worked example goes before the real question as a
# previous chat turn: a concrete exchange shows the answer format better than a description of it
# (small models especially), and the user turn itself stays just the material to judge.
# string.Template ($name) rather than str.format: the prompts are full of JSON braces.
_EXTRACTION_SYSTEM = """You split video descriptions into atomic facts.

Rules:
- A fact is one short sentence with a subject, a predicate and, where there is one, an object. \
Add place, time or cause only when the description gives them.
- Every fact stands on its own: write the noun instead of a pronoun ("he", "she", "it", "they").
- Keep the meaning exactly: keep negations ("no", "not", "without"), modality ("might", \
"appears to", "probably") and quantities ("two", "all", "some", "several").
- A sentence that says two things becomes two facts. Do not repeat a fact.
- Camera work is not a fact: leave out camera moves, zooms, cuts, scene changes and remarks such \
as "the video starts" or "the video ends". What people and animals do, their gestures and their \
expressions are facts.
- Take every fact the description states and nothing it does not state.

Answer with one JSON object and nothing else, in exactly this form:
{"facts": ["first fact", "second fact"]}"""

_DESCRIPTION = Template(
    """Video description:
<<<
$text
>>>"""
)

_EXTRACTION_EXAMPLE_TEXT = (
    "The camera pans left as two men in red coats open a door. They do not smile."
)
_EXTRACTION_EXAMPLE_ANSWER = (
    '{"facts": ["Two men wear red coats.", "Two men open a door.", "The two men do not smile."]}'
)

_CHECKING_SYSTEM = """You check facts against a video description. For every numbered fact, \
decide how the whole description relates to it:
- "entailment": the description states the fact or clearly implies it.
- "contradiction": the description states something that cannot be true together with the fact.
- "neutral": neither of the two; the description does not say, or it is unclear.

When unsure, choose "neutral". The reason is one short sentence that points to the words of the \
description. Judge every fact exactly once, in the order given, and refer to it by its number.

Answer with one JSON object and nothing else, in exactly this form:
{"labels": [{"fact": 1, "reason": "short reason", "label": "entailment"}, \
{"fact": 2, "reason": "short reason", "label": "neutral"}]}"""

_CHECKING_USER = Template(
    """Video description:
<<<
$text
>>>

Facts:
$facts"""
)

_CHECKING_EXAMPLE_TEXT = "Two men in red coats open a door."
_CHECKING_EXAMPLE_FACTS = ("Two men open a door.", "The men wear blue coats.", "The men are tall.")
_CHECKING_EXAMPLE_ANSWER = (
    '{"labels": [{"fact": 1, "reason": "The description says two men open a door.", '
    '"label": "entailment"}, {"fact": 2, "reason": "The description says the coats are red.", '
    '"label": "contradiction"}, {"fact": 3, "reason": "The description does not mention their '
    'height.", "label": "neutral"}]}'
)

_REPAIR_SYSTEM = (
    "You repair broken JSON. You change only syntax: quotes, escapes, brackets, braces and "
    "commas. You never add, remove or reword any content."
)

_REPAIR_USER = Template(
    """The text below was meant to be one JSON object but it does not parse ($error). Write the \
same content as valid JSON. Answer with the JSON object only, nothing before or after it.

$answer"""
)


#: Every fact of the worked examples, as written there: a small model sometimes copies them into
#: a real text's facts ("Two men wear red coats." about a video without any).
EXAMPLE_FACTS: tuple[str, ...] = (
    *json.loads(_EXTRACTION_EXAMPLE_ANSWER)["facts"], *_CHECKING_EXAMPLE_FACTS)

_WORD = re.compile(r"\w+")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


_EXAMPLE_WORDS = frozenset(tuple(_words(fact)) for fact in EXAMPLE_FACTS)


def copied_from_example(fact: str, text: str) -> bool:
    """Whether ``fact`` is one of the worked examples' facts (same words, case and punctuation
    aside) that ``text`` does not state: some of its words are not in ``text``. A real "Two men
    open a door." of a text that says so is kept."""
    words = _words(fact)
    return tuple(words) in _EXAMPLE_WORDS and not set(words) <= set(_words(text))


def extraction_messages(text: str) -> list[Message]:
    """Messages asking the model for the atomic facts of ``text`` as ``{"facts": [str, ...]}``.

    The last message holds ``text``, stripped, between ``<<<`` and ``>>>`` lines; the ones
    before it are the rules and a worked example.
    """
    return [
        {"role": "system", "content": _EXTRACTION_SYSTEM},
        {"role": "user", "content": _DESCRIPTION.substitute(text=_EXTRACTION_EXAMPLE_TEXT)},
        {"role": "assistant", "content": _EXTRACTION_EXAMPLE_ANSWER},
        {"role": "user", "content": _DESCRIPTION.substitute(text=text.strip())},
    ]


def checking_messages(text: str, facts: Sequence[str]) -> list[Message]:
    """Messages asking the model to label every fact in ``facts`` against the whole of ``text``.

    The facts are numbered from 1; the answer must be
    ``{"labels": [{"fact": <number>, "reason": str, "label": <label>}, ...]}``. The last message
    holds ``text``, stripped, between ``<<<`` and ``>>>`` lines and the numbered facts; the ones
    before it are the rules and a worked example.
    """
    return [
        {"role": "system", "content": _CHECKING_SYSTEM},
        {
            "role": "user",
            "content": _checking_question(_CHECKING_EXAMPLE_TEXT, _CHECKING_EXAMPLE_FACTS),
        },
        {"role": "assistant", "content": _CHECKING_EXAMPLE_ANSWER},
        {"role": "user", "content": _checking_question(text, facts)},
    ]


def _checking_question(text: str, facts: Sequence[str]) -> str:
    numbered = "\n".join(f"{number}. {fact}" for number, fact in enumerate(facts, start=1))
    return _CHECKING_USER.substitute(text=text.strip(), facts=numbered)


def repair_messages(answer: str, error: str) -> list[Message]:
    """Messages asking the model to fix only the JSON syntax of ``answer``, keeping its content."""
    return [
        {"role": "system", "content": _REPAIR_SYSTEM},
        {"role": "user", "content": _REPAIR_USER.substitute(error=error, answer=answer)},
    ]
