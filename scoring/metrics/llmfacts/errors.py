"""Errors raised by the LLMFactsF1 pipeline.

Every failure the pipeline can foresee surfaces as an :class:`LLMFactsError`, so a caller that
scores many pairs can catch one type, record the message next to the pair and carry on.
"""

from __future__ import annotations


class LLMFactsError(Exception):
    """LLMFactsF1 could not be computed; the message says which step failed and why."""


class BackendError(LLMFactsError):
    """The language model could not be reached or gave no usable answer (after any retries)."""


class AnswerError(LLMFactsError):
    """The model answered, but the answer is not the JSON the prompt asked for.

    ``stage`` is ``"extraction"`` or ``"checking"``; ``answer`` is the model's raw answer and
    ``repaired_answer`` the answer of the repair call, or ``None`` when no repair was attempted
    (repair only fixes syntax, so a well-formed answer with the wrong content is not repaired).
    """

    def __init__(
        self, message: str, *, stage: str, answer: str, repaired_answer: str | None = None
    ) -> None:
        super().__init__(message)
        self.stage = stage
        self.answer = answer
        self.repaired_answer = repaired_answer
