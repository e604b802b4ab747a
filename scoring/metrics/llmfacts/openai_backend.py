"""Chat backend for OpenAI-compatible chat-completions servers (vLLM, Ollama, llama.cpp, APIs).

Standard library only (urllib): one POST per call, no streaming, no extra dependency.

Constrained output: when the pipeline passes a JSON schema, the request carries it as
``response_format`` so that the server can only write an answer of that shape. Servers spell it
in two ways: OpenAI's ``{"type": "json_schema", "json_schema": {"schema": ...}}`` (vLLM, Ollama,
llama.cpp's own server, hosted APIs) and llama-cpp-python's ``{"type": "json_object",
"schema": ...}``. Before the first answer the backend asks the server once, with a tiny schema,
which of the two it follows; a server that refuses both, or answers as if it had not seen them,
gets plain prompts and the pipeline's repair call (:attr:`OpenAIChatBackend.answer_mode`).
"""

from __future__ import annotations

import http.client
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .backend import UNCONSTRAINED
from .errors import BackendError
from .prompts import Message
from .transformers_backend import end_of_first_repeat

#: Ways of asking for schema-constrained output, in the order they are tried.
RESPONSE_FORMATS = ("json_schema", "json_object")
STRUCTURED_OUTPUT_CHOICES = ("auto", *RESPONSE_FORMATS, "off")

# The probe: a schema whose only valid answer is {"ok": "yes"}, and a question that a model
# writing freely would not answer that way.
_PROBE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"ok": {"const": "yes"}},
    "required": ["ok"],
    "additionalProperties": False,
}
_PROBE_MESSAGES: list[Message] = [{"role": "user", "content": "Say hello to the reader."}]


class _Refused(BackendError):
    """The server answered the request with a client error (HTTP 4xx other than 429)."""


class _Retryable(Exception):
    """A failure that may pass: timeout, lost connection, rate limit or server error.

    ``status`` is the HTTP status of an error answer, ``None`` when no answer came."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class OpenAIChatBackend:
    """Calls ``POST {base_url}/chat/completions`` with temperature 0.

    ``base_url`` includes the API prefix, e.g. ``http://127.0.0.1:8000/v1``. A call that times
    out (``timeout_s`` per socket operation), loses its connection, or gets HTTP 429 or 5xx is
    tried again up to ``retries`` more times, waiting ``backoff_s``, then twice as long each time.
    Other HTTP errors fail at once. ``seed`` is sent for servers that honour it (more
    reproducible answers); ``None`` leaves it out. ``max_concurrency`` bounds how many requests
    a batch sends at once.

    ``structured_output`` says how to ask for schema-constrained answers: ``"auto"`` (ask the
    server once which way it takes, see the module docstring), ``"json_schema"`` or
    ``"json_object"`` (that way, no probe), or ``"off"`` (plain prompts and repair calls, for a
    server that accepts a schema but does not follow it).
    """

    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = 120.0
    retries: int = 3
    backoff_s: float = 1.0
    max_concurrency: int = 4
    max_tokens: int = 2048
    seed: int | None = 0
    structured_output: str = "auto"
    _mode: dict[str, str] = field(default_factory=dict, init=False, repr=False, compare=False)
    _mode_lock: Any = field(
        default_factory=threading.Lock, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if self.structured_output not in STRUCTURED_OUTPUT_CHOICES:
            raise ValueError(
                f"structured_output must be one of {', '.join(STRUCTURED_OUTPUT_CHOICES)}, "
                f"not {self.structured_output!r}"
            )

    @property
    def answer_mode(self) -> str:
        """``"json_schema"`` or ``"json_object"`` (the ``response_format`` this server follows)
        or :data:`UNCONSTRAINED`. With ``structured_output="auto"`` the first use asks the
        server (one short request); raises :class:`BackendError` when the server cannot be
        reached, so that an outage is not mistaken for a server without constrained output."""
        if self.structured_output != "auto":
            return UNCONSTRAINED if self.structured_output == "off" else self.structured_output
        with self._mode_lock:
            if "mode" not in self._mode:
                self._mode["mode"] = self._probe()
            return self._mode["mode"]

    def _probe(self) -> str:
        """Which response_format the server follows. A style it answers with an HTTP error is
        taken as refused: some servers (llama-cpp-python's) answer an unknown style with HTTP
        500 rather than 400. So that a broken server is not mistaken for one without
        constrained output, the fallback is only chosen once a plain request has succeeded."""
        for response_format in RESPONSE_FORMATS:
            body = self._body(_PROBE_MESSAGES, _PROBE_SCHEMA, response_format)
            body["max_tokens"] = 32
            payload = json.dumps(body).encode("utf-8")
            try:
                answer, _ = self._post(payload)
            except _Refused:
                continue
            except _Retryable as problem:
                if problem.status is not None and problem.status not in (429, 503):
                    continue
                answer, _ = self._send(payload)  # down or busy: the usual retries
            try:
                if json.loads(answer) == {"ok": "yes"}:
                    return response_format
            except ValueError:
                pass  # the server accepted the schema and ignored it
        plain = self._body(_PROBE_MESSAGES, None, UNCONSTRAINED)
        plain["max_tokens"] = 8
        self._send(json.dumps(plain).encode("utf-8"))  # raises BackendError when it is broken
        return UNCONSTRAINED

    @property
    def model_id(self) -> str:
        """The served model's name: two servers serving one name are taken to answer alike."""
        return self.model

    @property
    def url(self) -> str:
        """The chat-completions endpoint."""
        return self.base_url.rstrip("/") + "/chat/completions"

    def chat(self, messages: Sequence[Message], *, schema: dict[str, Any] | None = None) -> str:
        """The assistant's answer to ``messages``; raises :class:`BackendError` on failure.

        With ``schema`` and a server that constrains its output (:attr:`answer_mode`), the
        answer follows the schema. If the server stopped at ``max_tokens`` because the model
        kept repeating an item of a list, the answer is cut before the first repeat and closed
        (:func:`~scoring.metrics.llmfacts.transformers_backend.end_of_first_repeat`).
        """
        mode = self.answer_mode if schema is not None else UNCONSTRAINED
        body = self._body(messages, schema, mode)
        answer, finish_reason = self._send(json.dumps(body).encode("utf-8"))
        if mode != UNCONSTRAINED and finish_reason == "length":
            answer = end_of_first_repeat(answer) or answer
        return answer

    def _body(
        self, messages: Sequence[Message], schema: dict[str, Any] | None, mode: str
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(message) for message in messages],
            "temperature": 0,
            "max_tokens": self.max_tokens,
            "stream": False,
        }
        if self.seed is not None:
            body["seed"] = self.seed
        if schema is not None and mode == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "strict": True, "schema": schema},
            }
        elif schema is not None and mode == "json_object":
            body["response_format"] = {"type": "json_object", "schema": schema}
        return body

    def _send(self, payload: bytes) -> tuple[str, str | None]:
        """POST with retries; the answer text and the finish reason."""
        attempts = self.retries + 1
        problems: list[str] = []
        for attempt in range(attempts):
            if attempt:
                time.sleep(self.backoff_s * 2 ** (attempt - 1))
            try:
                return self._post(payload)
            except _Retryable as problem:
                problems.append(str(problem))
        raise BackendError(
            f"{self.url} gave no answer in {attempts} attempt(s): {'; '.join(problems)}"
        )

    def _post(self, payload: bytes) -> tuple[str, str | None]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self.url, data=payload, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                raw = response.read()
        except urllib.error.HTTPError as error:
            detail = _snippet(error.read().decode("utf-8", "replace"))
            if error.code == 429 or error.code >= 500:
                raise _Retryable(f"HTTP {error.code} {detail}", error.code) from error
            raise _Refused(f"{self.url} refused the request: HTTP {error.code} {detail}") from error
        except urllib.error.URLError as error:
            raise _Retryable(_describe(error.reason)) from error
        except (TimeoutError, ConnectionError, http.client.HTTPException) as error:
            raise _Retryable(_describe(error)) from error
        return self._content(raw)

    def _content(self, raw: bytes) -> tuple[str, str | None]:
        try:
            choice = json.loads(raw)["choices"][0]
            content = choice["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as error:
            raise BackendError(
                f"{self.url} answered without choices[0].message.content: {_snippet(raw)}"
            ) from error
        if not isinstance(content, str):
            raise BackendError(f"{self.url} answered with non-text content: {content!r}")
        return content, choice.get("finish_reason")


def _describe(reason: object) -> str:
    if isinstance(reason, TimeoutError):
        return "timed out"
    return str(reason) or type(reason).__name__


def _snippet(text: str | bytes, limit: int = 200) -> str:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."
