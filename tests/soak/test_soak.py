"""The short soak (issue 20): the real stack under every fault once, each invariant holding.

It starts its own PostgreSQL cluster and Redis (it restarts and stops them), gunicorn and two
Celery workers, and runs ``python -m soak --short`` (about eight minutes on two busy cores);
`make soak` runs the long version. Marked ``soak``: `make test` runs it, `make test-fast` leaves it out.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent

# Bounded: about 8 minutes on two busy cores; the limit leaves room for a machine shared with other work.
pytestmark = [pytest.mark.soak, pytest.mark.timeout(1200)]

# The soak's report names each of these; adding an invariant means naming it here too.
EVERY_INVARIANT = (
    "saves lost", "decisions lost", "decisions written more often than sent", "state differs from the ledger",
    "audit replay differs", "claimed twice", "5xx other than 503 with Retry-After", "retries not converged",
    "jobs not done", "jobs without a request", "queued jobs not sent again", "disconnects not made",
    "annotators idle", "bundle or restore differs", "files without a row or rows without a file",
)


def test_the_short_soak_keeps_every_invariant_under_every_fault(tmp_path):
    from soak.stack import PG_BIN

    for needed in ("redis-server", "ffmpeg"):
        if not shutil.which(needed):
            pytest.fail(f"{needed} is not installed: the soak runs its own (apt-get install {needed})")
    if not (PG_BIN / "initdb").exists():
        pytest.fail(f"PostgreSQL 15's initdb is not in {PG_BIN}: the soak runs its own cluster")
    figures = tmp_path / "soak.json"
    done = subprocess.run([sys.executable, "-m", "soak", "--short", "--json", str(figures)], cwd=REPO,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"}, capture_output=True, text=True,
                          timeout=1100)
    assert figures.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(figures.read_text())
    print(done.stdout)
    assert report["violations"] == {name: 0 for name in report["violations"]}, done.stdout[-6000:]
    assert sorted(report["violations"]) == sorted(EVERY_INVARIANT), "an invariant was added or dropped"
    # Every fault ran (the media folder is a tmpfs only as root, which CI is).
    expected = {kind: 1 for kind in report["faults injected"]}
    if os.geteuid() != 0:
        expected["media folder full"] = 0
    assert report["faults injected"] == expected, report["fault errors"]
    assert report["acknowledged saves"] > 20 and report["requests"] > 200
    decisions = report["acknowledged decisions"]
    assert decisions.get("submit", 0) > 3 and decisions.get("claim", 0) > 3, decisions
    # The disconnect fault cut requests in flight both ways (its invariant says so too).
    assert report["client disconnects"].get("mid-body", 0) > 0, report["client disconnects"]
    assert report["client disconnects"].get("mid-response", 0) > 0, report["client disconnects"]
    assert done.returncode == 0
