"""The soak's simulated people speak HTTP as a browser does: a kept-alive connection the server
has closed meanwhile is not where their next request goes (the soak's settling looks once all
went there, so recovery never ran)."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from soak import people
from soak.people import Client, Ledger


class ClosesIdleConnections(BaseHTTPRequestHandler):
    """Answers 200 over HTTP/1.1 keep-alive and hangs up on a connection idle for a second, as
    gunicorn does after its keep-alive time."""

    protocol_version = "HTTP/1.1"
    timeout = 1.0

    def do_GET(self):  # noqa: N802 - the standard library's name
        body = b'{"ok": true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):  # noqa: N802 - the standard library's name
        try:
            body = self.rfile.read(int(self.headers["Content-Length"]))
        except OSError:
            return
        if len(body) == int(self.headers["Content-Length"]):
            self.server.received.append(body)
        self.do_GET()

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), ClosesIdleConnections)
    httpd.received = []
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def test_a_request_after_the_server_closed_an_idle_connection_is_answered(server, monkeypatch):
    monkeypatch.setattr(people, "IDLE_SECONDS", 0.5)
    client = Client("admin", server.server_address[1], "sessionid=x", "token", Ledger(), threading.Event(), 5)
    assert client.once("GET", "/first")[0] == 200
    time.sleep(1.5)  # the server has hung up on the kept-alive connection by now
    assert client.once("GET", "/second") == (200, {"ok": True})


def test_a_busy_client_keeps_its_connection(server):
    client = Client("admin", server.server_address[1], "sessionid=x", "token", Ledger(), threading.Event(), 5)
    client.once("GET", "/first")
    connection = client.connection.sock
    assert client.once("GET", "/second")[0] == 200
    assert client.connection.sock is connection


def test_the_disconnect_fault_cuts_a_request_mid_body_or_mid_response(server):
    """Mid-body: the server never gets the whole body. Mid-response: it got the request and
    began answering when the client reset the connection. Each cut is counted by kind and
    recorded as a request without an answer (which the person then retries)."""
    ledger = Ledger()
    client = Client("annotator", server.server_address[1], "sessionid=x", "token", ledger, threading.Event(), 5)
    client.disconnect_next, client.cut_half = True, True
    assert client.once("POST", "/save", {"text": "x" * 2000}) == (0, {})
    client.disconnect_next, client.cut_half = True, False
    assert client.once("POST", "/save", {"text": "y" * 2000}) == (0, {})
    assert client.once("POST", "/save", {"text": "z"}) == (200, {"ok": True})  # the next one is not cut
    time.sleep(0.3)
    assert [len(body) for body in server.received] == [len('{"text": ""}') + 2000, len('{"text": "z"}')]
    assert ledger.disconnects == {"mid-body": 1, "mid-response": 1}
    assert [r.answer for r in ledger.requests[:2]] == ["(the client hung up mid-body)",
                                                        "(the client hung up mid-response)"]
