"""The one thing the pipeline needs from a language model: answer a chat.

Backends: :class:`~scoring.metrics.llmfacts.openai_backend.OpenAIChatBackend` (any OpenAI-compatible
chat-completions server) and :class:`~scoring.metrics.llmfacts.transformers_backend.TransformersBackend`
(a Hugging Face model in this process). Anything else with these three members works too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from .prompts import Message

UNCONSTRAINED = "prompt+repair"
"""The answer mode of a backend that cannot constrain its output to a JSON schema."""


class ChatBackend(Protocol):
    """A deterministic chat model.

    ``model_id`` names the model and any setting that changes its answers; it is part of every
    cache key. ``max_concurrency`` is how many ``chat`` calls may usefully run at once.
    ``chat`` returns the assistant's answer text or raises
    :class:`~scoring.metrics.llmfacts.errors.BackendError`; it must be safe to call from several threads.

    A backend that can constrain its answers to a JSON schema also has ``answer_mode`` (a
    string other than :data:`UNCONSTRAINED` naming how it does so) and accepts
    ``chat(messages, schema=...)``; the pipeline then passes each step's schema and makes no
    repair calls. A backend without ``answer_mode`` is treated as unconstrained.
    """

    @property
    def model_id(self) -> str: ...

    @property
    def max_concurrency(self) -> int: ...

    def chat(self, messages: Sequence[Message]) -> str: ...
