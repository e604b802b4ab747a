"""LLMFactsF1 over HTTP: OpenAIChatBackend against a real local server process.

The server (llmfacts_fake_server.py) runs as its own process on 127.0.0.1 with a free port and
answers from a script each test sets.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from scoring.metrics.llmfacts import (
    PROMPT_VERSION,
    AnswerError,
    BackendError,
    LLMFactsResult,
    OpenAIChatBackend,
    ResultCache,
    extract_facts,
    llmfacts_f1,
    llmfacts_f1_many,
)
from scoring.metrics.llmfacts.pipeline import method_version
from scoring.metrics.llmfacts.schemas import checking_schema, extraction_schema

from .llmfacts_fake_server import FakeChatServer

TEXT_A = "A cat sleeps on a red sofa."
TEXT_B = "A black cat sleeps on a sofa."
FACTS_A = ["A cat sleeps.", "The cat is on a sofa.", "The sofa is red."]
FACTS_B = ["A cat sleeps.", "The cat is black.", "The cat is on a sofa."]


@pytest.fixture(scope="module")
def server() -> Iterator[FakeChatServer]:
    running = FakeChatServer()
    yield running
    running.stop()


def backend_for(server: FakeChatServer, **options: Any) -> OpenAIChatBackend:
    # Plain prompts unless a test is about constrained output: the repair path is tested here.
    settings: dict[str, Any] = {
        "timeout_s": 5.0,
        "retries": 2,
        "backoff_s": 0.01,
        "structured_output": "off",
    }
    settings.update(options)
    return OpenAIChatBackend(
        base_url=server.base_url, model="fake-llm", api_key="sk-test", **settings
    )


def answers(*contents: str, **extra: Any) -> list[dict[str, Any]]:
    return [{"content": content, **extra} for content in contents]


def extraction(text: str, responses: list[dict[str, Any]]) -> dict[str, Any]:
    return {"match": ["You split video descriptions", f"<<<\n{text}\n>>>"], "responses": responses}


def checking(text: str, responses: list[dict[str, Any]]) -> dict[str, Any]:
    return {"match": ["You check facts", f"<<<\n{text}\n>>>"], "responses": responses}


def repair(fragment: str, responses: list[dict[str, Any]]) -> dict[str, Any]:
    return {"match": ["You repair broken JSON", fragment], "responses": responses}


def facts_json(facts: list[str]) -> str:
    return json.dumps({"facts": facts})


def labels_json(*labels: str) -> str:
    items = [
        {"fact": number, "reason": f"because {number}", "label": label}
        for number, label in enumerate(labels, start=1)
    ]
    return json.dumps({"labels": items})


def good_pair_script() -> list[dict[str, Any]]:
    return [
        extraction(TEXT_A, answers(facts_json(FACTS_A))),
        extraction(TEXT_B, answers(facts_json(FACTS_B))),
        # A's facts against B: sleeps and sofa entailed, "red" unknown.
        checking(TEXT_B, answers(labels_json("entailment", "entailment", "neutral"))),
        # B's facts against A: "black" unknown.
        checking(TEXT_A, answers(labels_json("entailment", "neutral", "entailment"))),
    ]


def chat_requests(server: FakeChatServer, marker: str) -> list[dict[str, Any]]:
    return [
        request
        for request in server.requests()
        if marker in request["body"]["messages"][0]["content"]
    ]


def test_a_good_run_scores_the_pair(server: FakeChatServer) -> None:
    server.script(*good_pair_script())
    result = llmfacts_f1(TEXT_A, TEXT_B, backend_for(server), cache=ResultCache())

    assert result.a_to_b.facts == tuple(FACTS_A)
    assert [c.label for c in result.b_to_a.checks] == ["entailment", "neutral", "entailment"]
    assert result.b_to_a.checks[1].reason == "because 2"
    assert result.scores.ent_f1 == pytest.approx(2 / 3)
    assert result.scores.cont_f1 == 0.0
    assert result.llmfacts_f1 == pytest.approx(0.8)
    assert result.model_id == "fake-llm"


def test_requests_ask_for_deterministic_answers_with_the_api_key(server: FakeChatServer) -> None:
    server.script(*good_pair_script())
    llmfacts_f1(TEXT_A, TEXT_B, backend_for(server), cache=ResultCache())
    requests = server.requests()

    assert len(requests) == 4
    for request in requests:
        assert request["body"]["model"] == "fake-llm"
        assert request["body"]["temperature"] == 0
        assert request["body"]["seed"] == 0
        assert request["headers"]["Authorization"] == "Bearer sk-test"
        assert request["body"]["messages"][0]["role"] == "system"
        assert request["body"]["messages"][-1]["role"] == "user"


def test_a_malformed_answer_is_repaired_by_one_repair_call(server: FakeChatServer) -> None:
    broken = '{"facts": ["A cat sleeps.", "The cat is on a sofa.", "The sofa is red."'
    server.script(
        repair('"The sofa is red."', answers(facts_json(FACTS_A))),
        *good_pair_script()[1:],
        extraction(TEXT_A, answers(broken)),
    )
    result = llmfacts_f1(TEXT_A, TEXT_B, backend_for(server), cache=ResultCache())

    assert result.a_to_b.facts == tuple(FACTS_A)
    repairs = chat_requests(server, "You repair broken JSON")
    assert len(repairs) == 1
    repair_prompt = repairs[0]["body"]["messages"][-1]["content"]
    assert broken in repair_prompt
    assert "Expecting" in repair_prompt  # the parser's complaint is passed on


def test_an_answer_still_malformed_after_repair_fails_clearly(server: FakeChatServer) -> None:
    broken = "{'labels': [{'fact': 1, 'label': 'entailment'}]}"
    server.script(
        repair("'labels'", answers("Sorry, I cannot fix this.")),
        extraction(TEXT_A, answers(facts_json(FACTS_A))),
        extraction(TEXT_B, answers(facts_json(FACTS_B))),
        checking(TEXT_B, answers(broken)),
        checking(TEXT_A, answers(labels_json("entailment", "neutral", "entailment"))),
    )
    with pytest.raises(AnswerError) as caught:
        llmfacts_f1(TEXT_A, TEXT_B, backend_for(server), cache=ResultCache())

    error = caught.value
    assert error.stage == "checking"
    assert error.answer == broken
    assert error.repaired_answer == "Sorry, I cannot fix this."
    assert "LLMFactsF1 checking: the answer is not valid JSON" in str(error)
    assert "the repair call did not fix it" in str(error)
    assert len(chat_requests(server, "You repair broken JSON")) == 1


def test_a_server_that_never_answers_in_time_fails_after_the_retries(
    server: FakeChatServer,
) -> None:
    server.script(extraction(TEXT_A, answers(facts_json(FACTS_A), delay_s=3)))
    backend = backend_for(server, timeout_s=0.3, retries=1)
    started = time.monotonic()
    with pytest.raises(
        BackendError, match=r"gave no answer in 2 attempt\(s\): timed out; timed out"
    ):
        extract_facts(TEXT_A, backend, cache=ResultCache())

    assert time.monotonic() - started < 2.5
    assert len(server.requests()) == 2


def test_a_timeout_followed_by_an_answer_succeeds(server: FakeChatServer) -> None:
    server.script(
        extraction(TEXT_A, [{"content": "{}", "delay_s": 2}, {"content": facts_json(FACTS_A)}])
    )
    backend = backend_for(server, timeout_s=0.3, retries=2)

    assert extract_facts(TEXT_A, backend, cache=ResultCache()) == tuple(FACTS_A)
    assert len(server.requests()) == 2


def test_server_errors_are_retried_until_an_answer_comes(server: FakeChatServer) -> None:
    server.script(
        extraction(TEXT_A, [{"status": 503}, {"status": 500}, {"content": facts_json(FACTS_A)}])
    )
    backend = backend_for(server, retries=2)

    assert extract_facts(TEXT_A, backend, cache=ResultCache()) == tuple(FACTS_A)
    assert len(server.requests()) == 3


def test_server_errors_beyond_the_retries_fail_clearly(server: FakeChatServer) -> None:
    server.script(extraction(TEXT_A, [{"status": 502}]))
    backend = backend_for(server, retries=2)

    with pytest.raises(BackendError, match=r"3 attempt\(s\): HTTP 502.*HTTP 502.*HTTP 502"):
        extract_facts(TEXT_A, backend, cache=ResultCache())


def test_a_client_error_is_not_retried(server: FakeChatServer) -> None:
    server.script()  # nothing scripted: the server answers 400
    backend = backend_for(server, retries=3)

    with pytest.raises(BackendError, match="refused the request: HTTP 400"):
        extract_facts(TEXT_A, backend, cache=ResultCache())
    assert len(server.requests()) == 1


def test_no_server_listening_fails_after_the_retries() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    backend = OpenAIChatBackend(
        base_url=f"http://127.0.0.1:{port}/v1", model="m", retries=1, backoff_s=0.01
    )
    with pytest.raises(BackendError, match=r"2 attempt\(s\)"):
        extract_facts(TEXT_A, backend, cache=ResultCache())


def test_batches_run_pairs_concurrently_and_keep_their_order(server: FakeChatServer) -> None:
    texts = [f"Animal number {number} sleeps." for number in range(4)]
    rules = []
    for text in texts:
        rules.append(extraction(text, answers(facts_json([text]), delay_s=0.2)))
        rules.append(checking(text, answers(labels_json("entailment"), delay_s=0.2)))
    server.script(*rules)
    pairs = [(text, text) for text in texts]

    results = llmfacts_f1_many(pairs, backend_for(server, max_concurrency=4), cache=ResultCache())

    assert all(isinstance(result, LLMFactsResult) for result in results)
    assert [result.a_to_b.facts for result in results if isinstance(result, LLMFactsResult)] == [
        (text,) for text in texts
    ]
    assert server.max_in_flight() > 1


def scored_requests(server: FakeChatServer) -> list[dict[str, Any]]:
    """The requests of the pipeline's steps, without the backend's probe."""
    return [
        request
        for request in server.requests()
        if request["body"]["messages"][0]["role"] == "system"
    ]


def test_a_server_that_follows_json_schema_gets_each_steps_schema(
    server: FakeChatServer,
) -> None:
    server.script(*good_pair_script(), response_format=["json_schema"])
    backend = backend_for(server, structured_output="auto")

    result = llmfacts_f1(TEXT_A, TEXT_B, backend, cache=ResultCache())

    assert result.llmfacts_f1 == pytest.approx(0.8)
    assert result.answer_mode == "json_schema"
    assert method_version(backend) == f"{PROMPT_VERSION}+constrained"
    formats = [request["body"]["response_format"] for request in scored_requests(server)]
    assert len(formats) == 4 and all(f["type"] == "json_schema" for f in formats)
    schemas = [f["json_schema"]["schema"] for f in formats]
    assert schemas[:2] == [extraction_schema(), extraction_schema()]
    assert schemas[2:] == [checking_schema(3), checking_schema(3)]
    # One probe, before the first step, and never again.
    assert len(server.requests()) == 5


def test_llama_cpp_python_style_response_format_is_found_by_the_probe(
    server: FakeChatServer,
) -> None:
    server.script(*good_pair_script(), response_format=["json_object"])
    backend = backend_for(server, structured_output="auto")

    result = llmfacts_f1(TEXT_A, TEXT_B, backend, cache=ResultCache())

    assert result.answer_mode == "json_object"
    for request in scored_requests(server):
        assert request["body"]["response_format"]["type"] == "json_object"
        assert request["body"]["response_format"]["schema"]["required"] in (
            ["facts"],
            ["labels"],
        )


def test_checking_schema_allows_exactly_one_entry_per_fact_in_order() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = checking_schema(2)
    good = json.loads(labels_json("entailment", "neutral"))
    jsonschema.validate(good, schema)
    too_few = json.loads(labels_json("entailment"))
    too_many = json.loads(labels_json("entailment", "neutral", "neutral"))
    swapped = {"labels": list(reversed(good["labels"]))}
    bad_label = json.loads(labels_json("entailment", "entailed"))
    for answer in (too_few, too_many, swapped, bad_label):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(answer, schema)
    jsonschema.validate(json.loads(facts_json(FACTS_A)), extraction_schema())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"facts": [""]}, extraction_schema())


@pytest.mark.parametrize("policy", ["refuse", "ignore"])
def test_a_server_without_constrained_output_falls_back_to_prompt_and_repair(
    server: FakeChatServer, policy: str
) -> None:
    broken = '{"facts": ["A cat sleeps.", "The cat is on a sofa.", "The sofa is red."'
    server.script(
        repair('"The sofa is red."', answers(facts_json(FACTS_A))),
        extraction(TEXT_A, answers(broken)),
        *good_pair_script()[1:],
        response_format=policy,
    )
    backend = backend_for(server, structured_output="auto")

    result = llmfacts_f1(TEXT_A, TEXT_B, backend, cache=ResultCache())

    assert result.llmfacts_f1 == pytest.approx(0.8)
    assert result.answer_mode == "prompt+repair"
    assert result.to_dict()["answer_mode"] == "prompt+repair"
    assert method_version(backend) == f"{PROMPT_VERSION}+repair"
    assert len(chat_requests(server, "You repair broken JSON")) == 1
    assert all("response_format" not in r["body"] for r in scored_requests(server))


def test_a_constrained_answer_that_does_not_parse_fails_without_a_repair_call(
    server: FakeChatServer,
) -> None:
    server.script(
        extraction(TEXT_A, answers('{"facts": ["A cat sl')),
        response_format=["json_schema"],
    )
    backend = backend_for(server, structured_output="json_schema")

    with pytest.raises(AnswerError, match="constrains its output") as failure:
        extract_facts(TEXT_A, backend, cache=ResultCache())

    assert failure.value.stage == "extraction"
    assert chat_requests(server, "You repair broken JSON") == []


def test_a_constrained_answer_cut_while_repeating_ends_before_the_repeat(
    server: FakeChatServer,
) -> None:
    looping = '{"facts": ["A cat sleeps.", "The sofa is red.", "A cat sleeps.", "The sofa is r'
    server.script(
        extraction(TEXT_A, answers(looping, finish_reason="length")),
        response_format=["json_schema"],
    )
    backend = backend_for(server, structured_output="json_schema")

    facts = extract_facts(TEXT_A, backend, cache=ResultCache())

    assert facts == ("A cat sleeps.", "The sofa is red.")


def test_an_unknown_structured_output_setting_is_refused() -> None:
    with pytest.raises(ValueError, match="structured_output must be one of"):
        OpenAIChatBackend(base_url="http://127.0.0.1:1/v1", model="m", structured_output="yes")


def test_a_reference_shared_by_many_pairs_is_extracted_once_over_http(
    server: FakeChatServer,
) -> None:
    reference = "A dog runs on a beach."
    predictions = [f"A dog number {number} runs." for number in range(5)]
    rules = [extraction(reference, answers(facts_json([reference]), delay_s=0.1))]
    for text in predictions:
        rules.append(extraction(text, answers(facts_json([text]))))
        rules.append(checking(text, answers(labels_json("neutral"))))
    rules.append(checking(reference, answers(labels_json("neutral"))))
    server.script(*rules, response_format=["json_schema"])
    backend = backend_for(server, structured_output="auto", max_concurrency=4)

    results = llmfacts_f1_many(
        [(reference, text) for text in predictions], backend, cache=ResultCache()
    )

    assert all(isinstance(result, LLMFactsResult) for result in results)
    asked = [
        request
        for request in chat_requests(server, "You split video descriptions")
        if f"<<<\n{reference}\n>>>" in request["body"]["messages"][-1]["content"]
    ]
    assert len(asked) == 1


def test_requests_in_flight_never_exceed_the_configured_concurrency() -> None:
    # A server of its own: requests that other tests abandoned (timeouts) may still be in
    # flight on the shared one.
    server = FakeChatServer()
    try:
        texts = [f"Bird number {number} sings." for number in range(6)]
        rules = []
        for text in texts:
            rules.append(extraction(text, answers(facts_json([text]), delay_s=0.15)))
            rules.append(checking(text, answers(labels_json("entailment"), delay_s=0.15)))
        server.script(*rules)

        results = llmfacts_f1_many(
            [(text, text) for text in texts],
            backend_for(server, max_concurrency=2),
            cache=ResultCache(),
        )

        assert all(isinstance(result, LLMFactsResult) for result in results)
        assert server.max_in_flight() == 2
    finally:
        server.stop()
