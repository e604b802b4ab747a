"""Chat backend for OpenAI-compatible chat-completions servers (vLLM, Ollama, llama.cpp, APIs).

Standard library only (urllib): one POST per call, no streaming, no extra dependency.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import BackendError
from .prompts import Message


class _Retryable(Exception):
    """A failure that may pass: timeout, lost connection, rate limit or server error."""


@dataclass(frozen=True)
class OpenAIChatBackend:
    """Calls ``POST {base_url}/chat/completions`` with temperature 0.

    ``base_url`` includes the API prefix, e.g. ``http://127.0.0.1:8000/v1``. A call that times
    out (``timeout_s`` per socket operation), loses its connection, or gets HTTP 429 or 5xx is
    tried again up to ``retries`` more times, waiting ``backoff_s``, then twice as long each time.
    Other HTTP errors fail at once. ``seed`` is sent for servers that honour it (more
    reproducible answers); ``None`` leaves it out.
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

    @property
    def model_id(self) -> str:
        """The served model's name: two servers serving one name are taken to answer alike."""
        return self.model

    @property
    def url(self) -> str:
        """The chat-completions endpoint."""
        return self.base_url.rstrip("/") + "/chat/completions"

    def chat(self, messages: Sequence[Message]) -> str:
        """The assistant's answer to ``messages``; raises :class:`BackendError` on failure."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(message) for message in messages],
            "temperature": 0,
            "max_tokens": self.max_tokens,
            "stream": False,
        }
        if self.seed is not None:
            body["seed"] = self.seed
        payload = json.dumps(body).encode("utf-8")
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

    def _post(self, payload: bytes) -> str:
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
                raise _Retryable(f"HTTP {error.code} {detail}") from error
            raise BackendError(
                f"{self.url} refused the request: HTTP {error.code} {detail}"
            ) from error
        except urllib.error.URLError as error:
            raise _Retryable(_describe(error.reason)) from error
        except (TimeoutError, ConnectionError, http.client.HTTPException) as error:
            raise _Retryable(_describe(error)) from error
        return self._content(raw)

    def _content(self, raw: bytes) -> str:
        try:
            content = json.loads(raw)["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as error:
            raise BackendError(
                f"{self.url} answered without choices[0].message.content: {_snippet(raw)}"
            ) from error
        if not isinstance(content, str):
            raise BackendError(f"{self.url} answered with non-text content: {content!r}")
        return content


def _describe(reason: object) -> str:
    if isinstance(reason, TimeoutError):
        return "timed out"
    return str(reason) or type(reason).__name__


def _snippet(text: str | bytes, limit: int = 200) -> str:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."
