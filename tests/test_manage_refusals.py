"""manage.py answers a refusal with its sentence and exit status 1, never a traceback: here a
reference import into a closed study, which the study's state rule refuses."""

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def manage(env, *args):
    return subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300)


def test_a_refused_command_prints_the_refusal_not_a_traceback(tmp_path):
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
           "REDLINE_VAR_DIR": str(tmp_path / "var"), "CELERY_BROKER_URL": ""}
    assert manage(env, "migrate", "-v0").returncode == 0
    assert manage(env, "create_study", "lab", "--name", "Lab").returncode == 0
    moved = manage(env, "shell", "-c",
                   "from annotation.models import Study; Study.objects.filter(slug='lab').update(state='closed')")
    assert moved.returncode == 0, moved.stderr
    references = tmp_path / "refs.jsonl"
    references.write_text('{"clip": "c1", "text": "A dog runs."}\n')

    answer = manage(env, "import_references", str(references), "--study", "lab")

    assert answer.returncode == 1
    assert answer.stderr.startswith("Refused: ") and "closed" in answer.stderr
    assert "Traceback" not in answer.stderr
