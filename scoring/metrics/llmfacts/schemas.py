"""JSON schemas of the two answers, for backends that constrain decoding to a schema.

A server or decoder that follows these schemas can only write an answer that the strict parser
(:mod:`scoring.metrics.llmfacts.parsing`) accepts: ``{"facts": [...]}`` with non-empty strings, and
``{"labels": [...]}`` with exactly one entry per fact, numbered 1..k in order, each with a
reason and one of :data:`~scoring.metrics.llmfacts.parsing.LABELS`.

The length limits keep a small model that loops from writing until its token limit (the answer
would then be cut short and unparseable); they are far above what a good answer needs.
"""

from __future__ import annotations

from typing import Any

from .parsing import LABELS, MAX_FACT_CHARS, MAX_FACTS, MAX_REASON_CHARS

# The bounds live with the parser, which refuses an answer beyond them whatever the server did.
__all__ = ["MAX_FACTS", "MAX_FACT_CHARS", "MAX_REASON_CHARS", "checking_schema",
           "extraction_schema"]


def extraction_schema() -> dict[str, Any]:
    """Schema of an extraction answer: ``{"facts": [str, ...]}``, at most :data:`MAX_FACTS`."""
    return {
        "type": "object",
        "properties": {
            "facts": {
                "type": "array",
                "items": {"type": "string", "minLength": 1, "maxLength": MAX_FACT_CHARS},
                "maxItems": MAX_FACTS,
            }
        },
        "required": ["facts"],
        "additionalProperties": False,
    }


def checking_schema(fact_count: int) -> dict[str, Any]:
    """Schema of a checking answer for ``fact_count`` facts: entry n has ``"fact": n``.

    Each entry is ``{"fact": n, "reason": str, "label": one of LABELS}`` with the reason before
    the label, so that the model writes its reason first and decides after it.
    """
    if fact_count < 1:
        raise ValueError("a checking answer needs at least one fact")
    entries = [
        {
            "type": "object",
            "properties": {
                "fact": {"const": number},
                "reason": {"type": "string", "maxLength": MAX_REASON_CHARS},
                "label": {"enum": list(LABELS)},
            },
            "required": ["fact", "reason", "label"],
            "additionalProperties": False,
        }
        for number in range(1, fact_count + 1)
    ]
    return {
        "type": "object",
        "properties": {
            "labels": {
                "type": "array",
                "prefixItems": entries,
                "items": False,
                "minItems": fact_count,
                "maxItems": fact_count,
            }
        },
        "required": ["labels"],
        "additionalProperties": False,
    }
