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

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), ClosesIdleConnections)
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
