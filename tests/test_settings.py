"""Configuration from the environment: safe defaults, and refusal of unsafe production settings."""

import os
import subprocess
import sys

from tests.conftest import REPO

PRINT = (
    "import django; django.setup(); from django.conf import settings as s; "
    "print(s.DATABASES['default']['ENGINE'], s.CELERY_TASK_ALWAYS_EAGER, s.DEBUG, s.ALLOWED_HOSTS, "
    "s.JOB_RUNNER)"
)


def load_settings(**env):
    clean = {k: v for k, v in os.environ.items() if k not in {
        "DEBUG", "SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL", "CELERY_TASK_ALWAYS_EAGER",
        "ALLOWED_HOSTS", "JOB_RUNNER"}}
    return subprocess.run(
        [sys.executable, "-c", PRINT], cwd=REPO, capture_output=True, text=True,
        env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings", **env},
    )


def test_nothing_set_means_sqlite_eager_tasks_and_debug():
    result = load_settings()
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[:3] == ["django.db.backends.sqlite3", "True", "True"]


def test_database_and_broker_urls_switch_to_postgresql_and_a_real_broker():
    result = load_settings(DATABASE_URL="postgres://u@127.0.0.1:5432/x", CELERY_BROKER_URL="redis://127.0.0.1:6379/0")
    assert result.stdout.split()[:2] == ["django.db.backends.postgresql", "False"]


def test_debug_off_with_the_development_secret_is_refused():
    result = load_settings(DEBUG="0")
    assert result.returncode != 0
    assert "SECRET_KEY is the development secret" in result.stderr


def test_debug_off_with_a_real_secret_starts_with_the_given_hosts():
    result = load_settings(DEBUG="0", SECRET_KEY="x" * 50, ALLOWED_HOSTS="redline.example.org")
    assert result.returncode == 0, result.stderr
    assert "['redline.example.org']" in result.stdout


def test_without_a_broker_jobs_run_in_job_threads_not_in_the_request():
    assert load_settings().stdout.split()[-1] == "threads"


def test_with_a_broker_jobs_go_to_celery_workers():
    result = load_settings(CELERY_BROKER_URL="redis://127.0.0.1:6379/0")
    assert result.stdout.split()[-1] == "celery"


def test_an_unknown_job_runner_is_refused():
    result = load_settings(JOB_RUNNER="inline")
    assert result.returncode != 0
    assert "JOB_RUNNER must be celery or threads" in result.stderr


CACHE = ("import django; django.setup(); from django.conf import settings as s; "
         "c = s.CACHES['default']; print(c['BACKEND'].rsplit('.', 1)[-1], c['LOCATION'])")


def cache_settings(**env) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if k not in {"CACHE_URL", "REDLINE_VAR_DIR"}}
    result = subprocess.run(
        [sys.executable, "-c", CACHE], cwd=REPO, capture_output=True, text=True, check=True,
        env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings", **env},
    )
    return result.stdout.split()


def test_without_cache_url_the_cache_is_files_in_var_that_the_web_and_the_worker_share(tmp_path):
    """Not per-process memory: the demo's worker writes import progress that the web reads."""
    assert cache_settings(REDLINE_VAR_DIR=str(tmp_path)) == ["FileBasedCache", str(tmp_path / "cache")]


def test_cache_url_puts_the_cache_in_redis():
    assert cache_settings(CACHE_URL="redis://127.0.0.1:6379/1") == ["RedisCache", "redis://127.0.0.1:6379/1"]


def sqlite_writers(tmp_path) -> dict:
    """tests/sqlite_writers_main.py on a SQLite file: two threads, read-then-write against a commit."""
    import json

    clean = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "DEBUG", "SECRET_KEY"}}
    result = subprocess.run(
        [sys.executable, "tests/sqlite_writers_main.py"], cwd=REPO, capture_output=True, text=True,
        timeout=120, env={**clean, "DATABASE_URL": f"sqlite:///{tmp_path / 'two-writers.sqlite3'}",
                          "REDLINE_VAR_DIR": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_on_sqlite_a_read_then_write_survives_another_connections_commit(tmp_path):
    """A deferred transaction that read before another connection committed cannot upgrade to a
    write: SQLite answers "database is locked" at once, whatever the busy timeout. Immediate
    transactions take the write lock first, so the second writer waits instead."""
    outcome = sqlite_writers(tmp_path)
    assert outcome["results"] == {"a": "ok", "b": "ok"}
    assert outcome["values"] == {"a": 1, "b": 1}


def test_sqlite_keeps_write_ahead_logging_and_waits_for_a_competing_writer(tmp_path):
    outcome = sqlite_writers(tmp_path)
    assert outcome["journal_mode"] == "wal"
    # Long enough for a worker's chunk of scores or an import's batch, short enough to say so.
    assert 5_000 <= outcome["busy_timeout_ms"] <= 60_000


def database_options(**env) -> str:
    script = ("import django; django.setup(); from django.conf import settings as s; "
              "print(s.DATABASES['default'].get('OPTIONS', {}))")
    clean = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "DATABASE_PREPARED_STATEMENTS"}}
    result = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True,
                            env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings", **env})
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_postgresql_binds_on_the_server_and_prepares_statements_unless_told_not_to():
    url = "postgres://u@127.0.0.1:5432/x"
    assert database_options(DATABASE_URL=url) == "{'server_side_binding': True, 'prepare_threshold': 2}"
    assert database_options(DATABASE_URL=url, DATABASE_PREPARED_STATEMENTS="0") == "{}"
    assert "server_side_binding" not in database_options()  # SQLite has no such thing
