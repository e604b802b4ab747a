"""Say where Redline is once it answers: `make demo` and `make serve` run this beside the web
server and the worker, so the address (and the demo accounts) come after the worker's banner
and warnings, not before them where they scroll away.

    python scripts/serve_banner.py --host 127.0.0.1 --port 8000 [--accounts]
    python scripts/serve_banner.py --port 8000 --check-free   # exit 1 when the port is taken

Plain Python, no Django: it starts in milliseconds. The accounts are those of
annotation/services/demo.py (tests/test_serve_banner.py checks that they agree).
"""

from __future__ import annotations

import argparse
import socket
import sys
import time
import urllib.error
import urllib.request

DEMO_PASSWORD = "redline-demo"
DEMO_ACCOUNTS = [
    ("admin", "study admin, researcher (and site admin)"),
    ("annotator", "annotator"),
    ("annotator2", "annotator"),
    ("annotator3", "annotator"),
    ("reviewer", "QC reviewer"),
    ("researcher", "researcher"),
]


def answers(url: str) -> bool:
    """Whether an HTTP server answers at `url` (any status counts: a redirect to the sign-in)."""
    try:
        urllib.request.urlopen(url, timeout=2)  # noqa: S310 (a local address we were given)
    except urllib.error.HTTPError:
        return True
    except (OSError, ValueError):
        return False
    return True


def port_taken(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(1)
        return probe.connect_ex((host, port)) == 0


def banner(url: str, *, accounts: bool, mail_dir: str = "") -> str:
    lines = ["", f"Redline is ready at {url}  (Ctrl-C stops it)"]
    if accounts:
        lines.append(f"Demo accounts, password {DEMO_PASSWORD}:")
        lines += [f"  {name:<11} {roles}" for name, roles in DEMO_ACCOUNTS]
    if mail_dir:
        lines.append(f"E-mails (invitations) are not sent: each is written as a file in {mail_dir}/")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--accounts", action="store_true", help="also list the demo accounts")
    parser.add_argument("--mail-dir", default="", help="say that e-mails are written to this folder")
    parser.add_argument("--check-free", action="store_true", help="exit 1 if something listens on the port")
    parser.add_argument("--wait", type=float, default=300, help="seconds to wait for the server")
    parser.add_argument("--settle", type=float, default=1.0,
                        help="seconds to wait after the first answer (the worker's last messages)")
    options = parser.parse_args(argv)
    if options.check_free:
        if port_taken(options.host, options.port):
            print(f"Port {options.port} on {options.host} is busy (another server?): "
                  f"choose another, e.g. `make demo PORT={options.port + 1}`.", file=sys.stderr)
            return 1
        return 0
    url = f"http://{options.host}:{options.port}/"
    deadline = time.monotonic() + options.wait
    while not answers(url):
        if time.monotonic() > deadline:
            print(f"Redline did not answer at {url} within {options.wait:g} s; see the messages above.",
                  file=sys.stderr)
            return 1
        time.sleep(0.25)
    time.sleep(options.settle)
    sys.stdout.write(banner(url, accounts=options.accounts, mail_dir=options.mail_dir))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
