"""The timeline's arithmetic (frontend/static/frontend/timeline-math.js), under node's test runner."""

from __future__ import annotations

import shutil
import subprocess

from tests.conftest import REPO


def test_timeline_math_unit_tests_pass_under_node():
    node = shutil.which("node")
    assert node, "Node.js is needed for the browser-code tests (install the Debian package nodejs)"
    done = subprocess.run(
        [node, "--test", str(REPO / "tests" / "frontend" / "js" / "timeline_math.test.mjs")],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "# pass 3" in done.stdout
