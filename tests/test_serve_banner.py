"""`make demo` says where Redline is once the server answers, after the worker's messages:
scripts/serve_banner.py, run through the Makefile's own `banner` step against a real server."""

from __future__ import annotations

import http.server
import socket
import subprocess
import sys
import threading
import time

import pytest

from tests.conftest import REPO

SCRIPT = REPO / "scripts" / "serve_banner.py"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Quiet(http.server.SimpleHTTPRequestHandler):
    def do_GET(self):  # a sign-in redirect, as Redline answers /
        self.send_response(302)
        self.send_header("Location", "/login/")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    def start(port: int):
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), Quiet)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        started.append(httpd)
        return httpd

    started: list = []
    yield start
    for httpd in started:
        httpd.shutdown()
        httpd.server_close()


def test_the_makefile_prints_the_url_and_accounts_only_once_the_server_answers(server):
    port = free_port()
    banner = subprocess.Popen(
        ["make", "--no-print-directory", "-s", "banner", f"PORT={port}", "BANNER_FLAGS=--accounts --settle 0"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    assert banner.poll() is None  # nothing answers yet: still waiting, nothing printed
    server(port)
    out, err = banner.communicate(timeout=30)
    assert banner.returncode == 0, err
    assert f"Redline is ready at http://127.0.0.1:{port}/" in out
    assert "password redline-demo" in out
    for name in ("admin", "annotator", "annotator2", "annotator3", "reviewer", "researcher"):
        assert f"  {name} " in out


def test_without_accounts_only_the_url_is_printed(server):
    port = free_port()
    server(port)
    done = subprocess.run([sys.executable, SCRIPT, "--port", str(port), "--settle", "0"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and "ready at" in done.stdout and "redline-demo" not in done.stdout


def test_a_busy_port_is_said_before_anything_starts_naming_port(server):
    port = free_port()
    server(port)
    busy = subprocess.run([sys.executable, SCRIPT, "--port", str(port), "--check-free"],
                          capture_output=True, text=True, timeout=30)
    assert busy.returncode == 1 and f"make demo PORT={port + 1}" in busy.stderr
    free = subprocess.run([sys.executable, SCRIPT, "--port", str(free_port()), "--check-free"],
                          capture_output=True, text=True, timeout=30)
    assert free.returncode == 0


def test_a_server_that_never_answers_is_said(server):
    done = subprocess.run([sys.executable, SCRIPT, "--port", str(free_port()), "--wait", "0.5"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 1 and "did not answer" in done.stderr


def test_the_banner_lists_the_demo_accounts_of_the_demo():
    from annotation.services.demo import DEMO_ACCOUNTS, DEMO_PASSWORD

    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import serve_banner
    finally:
        sys.path.remove(str(SCRIPT.parent))
    assert [name for name, _ in serve_banner.DEMO_ACCOUNTS] == list(DEMO_ACCOUNTS)
    assert serve_banner.DEMO_PASSWORD == DEMO_PASSWORD


def test_the_demo_says_where_its_mail_is_written(server):
    """`make demo` writes invitation e-mails as files (Django's file-based backend) and the banner
    names the folder; the Makefile passes both."""
    port = free_port()
    server(port)
    done = subprocess.run([sys.executable, SCRIPT, "--port", str(port), "--settle", "0", "--mail-dir", "var/mail"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and "each is written as a file in var/mail/" in done.stdout
    makefile = (REPO / "Makefile").read_text()
    demo = makefile[makefile.index("\ndemo:"):makefile.index("\nserve:")]
    assert "--mail-dir var/mail" in demo
    assert "MAIL_ENV=EMAIL_BACKEND=django.core.mail.backends.filebased.EmailBackend" in demo
    assert "$(DEMO_ENV) $(MAIL_ENV) $(PY) manage.py runserver" in makefile
