"""A scripted OpenAI-compatible chat-completions server, run as a real process by the tests.

Run ``python llmfacts_fake_server.py``: it listens on 127.0.0.1 on a free port and prints
``PORT <n>``. Endpoints:

- ``POST /v1/chat/completions``: answers from the script, records the request;
- ``POST /_script`` with ``{"rules": [...], "response_format": ...}``: replaces the script and
  clears the record;
- ``GET /_requests``: the recorded requests (``headers`` and ``body``), oldest first;
- ``GET /_stats``: ``{"max_in_flight": n}``, the most chat requests handled at once.

A rule is ``{"match": [substring, ...], "responses": [response, ...]}``. A request takes the
first rule whose substrings all occur in its messages, and that rule's next response; the last
response repeats. A response is ``{"content": str}`` (HTTP 200), optionally with ``"status"``
(an error status, answered with an error body), ``"delay_s"`` (sleep first) and
``"finish_reason"`` (default ``"stop"``; ``"length"`` plays an answer cut at the limit). A
request that matches no rule gets HTTP 400, which the client does not retry, so a test fails loudly.

``response_format`` says what the server does with a request's ``response_format``:
``"refuse"`` (the default: HTTP 400, like a server that does not know it), ``"ignore"`` (answer
as if it were absent), or a list of the types it follows (``"json_schema"``, ``"json_object"``;
others are refused). A server that follows a type answers the backend's probe schema (whose
only valid answer is ``{"ok": "yes"}``) with that answer, and every other request from the
script; one that ignores it answers the probe with a greeting. The probe's plain question
(without ``response_format``, asked before falling back) always gets a greeting.

:class:`FakeChatServer` starts and stops the process and talks to those endpoints.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

_lock = threading.Lock()
_rules: list[dict[str, Any]] = []
_requests: list[dict[str, Any]] = []
_in_flight = {"now": 0, "max": 0}
_settings: dict[str, Any] = {"response_format": "refuse"}
_PROBE_QUESTION = "Say hello to the reader."  # the OpenAI backend's probe


def _next_response(messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    joined = "\n".join(str(message.get("content", "")) for message in messages)
    with _lock:
        for rule in _rules:
            if all(part in joined for part in rule["match"]):
                responses: list[dict[str, Any]] = rule["responses"]
                return responses.pop(0) if len(responses) > 1 else responses[0]
    return None


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read the record instead."""

    _counted = False

    def _leave_flight(self) -> None:
        # Before the answer goes out: the client may send its next request at once.
        if self._counted:
            self._counted = False
            with _lock:
                _in_flight["now"] -= 1

    def _send_json(self, status: int, payload: Any) -> None:
        self._leave_flight()
        data = json.dumps(payload).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout test); nothing to answer

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length", "0"))
        return json.loads(self.rfile.read(length) or b"null")

    def do_GET(self) -> None:
        if self.path == "/_requests":
            with _lock:
                self._send_json(200, list(_requests))
        elif self.path == "/_stats":
            with _lock:
                self._send_json(200, {"max_in_flight": _in_flight["max"]})
        else:
            self._send_json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        body = self._body()
        if self.path == "/_script":
            with _lock:
                _rules[:] = body["rules"]
                _settings["response_format"] = body.get("response_format", "refuse")
                _requests.clear()
                _in_flight["max"] = 0
            self._send_json(200, {"ok": True})
            return
        if self.path != "/v1/chat/completions":
            self._send_json(404, {"error": {"message": "not found"}})
            return
        with _lock:
            _requests.append({"headers": dict(self.headers), "body": body})
            _in_flight["now"] += 1
            _in_flight["max"] = max(_in_flight["max"], _in_flight["now"])
        self._counted = True
        try:
            self._answer_chat(body)
        finally:
            self._leave_flight()

    def _answer_chat(self, body: dict[str, Any]) -> None:
        requested = body.get("response_format")
        if requested is not None:
            with _lock:
                policy = _settings["response_format"]
            if policy != "ignore" and (policy == "refuse" or requested["type"] not in policy):
                self._send_json(400, {"error": {"message": "response_format is not supported"}})
                return
            if _is_probe(requested):
                content = "Hello, reader!" if policy == "ignore" else '{"ok": "yes"}'
                self._send_content(body, content)
                return
        messages = body.get("messages", [])
        if requested is None and messages == [{"role": "user", "content": _PROBE_QUESTION}]:
            self._send_content(body, "Hello, reader!")
            return
        response = _next_response(messages)
        if response is None:
            self._send_json(400, {"error": {"message": "no scripted answer for this request"}})
            return
        time.sleep(response.get("delay_s", 0))
        status = response.get("status", 200)
        if status != 200:
            self._send_json(status, {"error": {"message": f"scripted HTTP {status}"}})
            return
        self._send_content(body, response["content"], response.get("finish_reason", "stop"))

    def _send_content(self, body: dict[str, Any], content: str, finish: str = "stop") -> None:
        self._send_json(
            200,
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "model": body.get("model"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": finish,
                    }
                ],
            },
        )


def _is_probe(response_format: dict[str, Any]) -> bool:
    schema = response_format.get("schema") or response_format.get("json_schema", {}).get("schema")
    return isinstance(schema, dict) and "ok" in schema.get("properties", {})


def serve() -> None:
    """Serve on 127.0.0.1 with a free port until killed, announcing ``PORT <n>``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


class FakeChatServer:
    """Runs this file as a separate process and scripts it over HTTP."""

    def __init__(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve())],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._process.stdout is not None
        announced = self._process.stdout.readline().split()
        if len(announced) != 2 or announced[0] != "PORT":
            self.stop()
            raise RuntimeError(f"fake server did not start: {announced!r}")
        self.port = int(announced[1])
        self.root = f"http://127.0.0.1:{self.port}"
        self.base_url = f"{self.root}/v1"

    def script(self, *rules: dict[str, Any], response_format: Any = "refuse") -> None:
        """Replace the script with ``rules`` and forget recorded requests; ``response_format``
        as in the module docstring."""
        self._call("/_script", {"rules": list(rules), "response_format": response_format})

    def requests(self) -> list[dict[str, Any]]:
        """The chat requests received since the last :meth:`script`."""
        result: list[dict[str, Any]] = self._call("/_requests")
        return result

    def max_in_flight(self) -> int:
        """The most chat requests the server handled at once since the last :meth:`script`."""
        return int(self._call("/_stats")["max_in_flight"])

    def stop(self) -> None:
        """End the server process."""
        self._process.terminate()
        self._process.wait(timeout=10)
        if self._process.stdout is not None:
            self._process.stdout.close()

    def _call(self, path: str, payload: Any = None) -> Any:
        data = None if payload is None else json.dumps(payload).encode("utf-8")
        request = urllib.request.Request(
            self.root + path, data=data, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())


if __name__ == "__main__":
    serve()
