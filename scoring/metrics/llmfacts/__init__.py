"""LLMFactsF1 (FM-V2T): compare two texts by the facts an LLM extracts from each and checks
against the other. Pure Python; no Django. See METRICS.md section 4.

Typical use::

    backend = OpenAIChatBackend(base_url="http://127.0.0.1:8000/v1", model="llama3.1:8b")
    result = llmfacts_f1(reference, prediction, backend)
    result.llmfacts_f1, result.a_to_b.checks, result.to_dict()
"""

from .backend import UNCONSTRAINED, ChatBackend
from .cache import ResultCache, cache_key, sha256_text
from .errors import AnswerError, BackendError, LLMFactsError
from .llamacpp_backend import LlamaCppBackend
from .openai_backend import OpenAIChatBackend
from .parsing import LABELS, Label, parse_facts, parse_json_answer, parse_labels
from .pipeline import (
    DirectionResult,
    FactCheck,
    LLMFactsResult,
    check_facts,
    extract_facts,
    llmfacts_f1,
    llmfacts_f1_many,
    method_version,
)
from .prompts import (
    PROMPT_VERSION,
    Message,
    checking_messages,
    extraction_messages,
    repair_messages,
)
from .schemas import checking_schema, extraction_schema
from .scores import DirectionCounts, Scores, combine, compute_scores, count_labels, harmonic_mean
from .transformers_backend import TransformersBackend, locate_smollm2_gguf

__all__ = [
    "LABELS",
    "PROMPT_VERSION",
    "AnswerError",
    "BackendError",
    "ChatBackend",
    "DirectionCounts",
    "DirectionResult",
    "FactCheck",
    "LLMFactsError",
    "LLMFactsResult",
    "Label",
    "Message",
    "OpenAIChatBackend",
    "ResultCache",
    "Scores",
    "TransformersBackend",
    "UNCONSTRAINED",
    "LlamaCppBackend",
    "cache_key",
    "check_facts",
    "checking_schema",
    "checking_messages",
    "combine",
    "compute_scores",
    "count_labels",
    "extract_facts",
    "extraction_messages",
    "extraction_schema",
    "harmonic_mean",
    "llmfacts_f1",
    "llmfacts_f1_many",
    "locate_smollm2_gguf",
    "method_version",
    "parse_facts",
    "parse_json_answer",
    "parse_labels",
    "repair_messages",
    "sha256_text",
]
