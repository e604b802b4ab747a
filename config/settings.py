"""Redline settings, read from the environment with safe defaults.

Nothing set means local development: SQLite in ./var, Celery tasks run eagerly
in-process (no broker), DEBUG on. Set DATABASE_URL for PostgreSQL and
CELERY_BROKER_URL for Redis in production. See docs/configuration.md.
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
DEV_SECRET_KEY = "redline-development-secret-do-not-use-in-production"


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if not value:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


DEBUG = env_bool("DEBUG", True)
SECRET_KEY = os.environ.get("SECRET_KEY", DEV_SECRET_KEY)
if not DEBUG and (SECRET_KEY == DEV_SECRET_KEY or len(SECRET_KEY) < 32):
    raise ImproperlyConfigured(
        "DEBUG is off but SECRET_KEY is the development secret or shorter than 32 characters: "
        "set SECRET_KEY to a long random value."
    )
# Rotating the key: earlier keys still open what they signed, and the participant ids they sealed.
SECRET_KEY_FALLBACKS = env_list("SECRET_KEY_FALLBACKS", [])
LOCAL_HOSTS = ["127.0.0.1", "localhost", "[::1]"]
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", LOCAL_HOSTS if DEBUG else [])
if DEBUG and not set(ALLOWED_HOSTS) <= {*LOCAL_HOSTS, "testserver"}:
    # DEBUG pages show settings and tracebacks to whoever asks: never on a reachable host.
    raise ImproperlyConfigured(
        f"DEBUG is on (the default when it is unset) but ALLOWED_HOSTS names hosts that are not "
        f"local ({', '.join(sorted(set(ALLOWED_HOSTS) - set(LOCAL_HOSTS)))}): set DEBUG=0 for "
        "a server others reach (see docs/production.md)."
    )
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

VAR_DIR = Path(os.environ.get("REDLINE_VAR_DIR", BASE_DIR / "var"))

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "annotation",
    "scoring",
    "frontend",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "annotation.middleware.RefuseUnstorableQuery",
    "annotation.middleware.AnswerWhenAServiceFails",
    "django.middleware.csrf.CsrfViewMiddleware",
    "config.auth.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "config.middleware.ContentSecurityPolicyMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{VAR_DIR / 'redline.sqlite3'}"),
        conn_max_age=int(os.environ.get("DATABASE_CONN_MAX_AGE", "60")),
        # A kept connection is checked before a request reuses it: after a database restart the
        # next request reconnects instead of failing on the connection the restart closed.
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    Path(DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
    # The web server and the worker (or the job threads) write to one file. A transaction takes
    # the write lock when it begins (IMMEDIATE): a deferred one that has read cannot upgrade to a
    # write once another connection committed, and SQLite then fails it at once with "database
    # is locked", whatever the timeout. The timeout (seconds) is how long a writer waits for the
    # other's commit. Write-ahead logging lets the web server read while a worker's long
    # transaction (a 100,000-caption import) writes: without it, pages wait for that commit.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        timeout=20, transaction_mode="IMMEDIATE", init_command="PRAGMA journal_mode=WAL")
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and env_bool("DATABASE_PREPARED_STATEMENTS", True):
    # PostgreSQL plans a statement the second time a connection runs it and reuses the plan:
    # parameters bound on the server and psycopg's prepared statements (Django's default is
    # neither). The hot paths run the same few statements on every request (annotation.prepared),
    # and planning was most of the database's time for them (bench/bench_request_cpu.py). Off
    # (DATABASE_PREPARED_STATEMENTS=0) behind a pooler that does not keep prepared statements
    # per client, such as PgBouncer before 1.21 in transaction mode.
    DATABASES["default"].setdefault("OPTIONS", {}).update(server_side_binding=True, prepare_threshold=2)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
WHITENOISE_USE_FINDERS = DEBUG
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", BASE_DIR / "staticfiles"))
MEDIA_ROOT = Path(os.environ.get("MEDIA_ROOT", VAR_DIR / "media"))
# Collected static files carry a hash of their content in their names, with compressed copies,
# and are served with far-future immutable caching (config/staticfiles.py). With DEBUG off,
# `manage.py collectstatic` must have run: a page naming a file that was not collected fails.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "config.staticfiles.StaticFiles"},
}
MEDIA_URL = "media/"

# Clip playback. With X-Accel-Redirect on, Django checks permissions and nginx
# streams the file from the internal location MEDIA_ACCEL_PREFIX (see docs/production.md).
MEDIA_X_ACCEL_REDIRECT = env_bool("MEDIA_X_ACCEL_REDIRECT", False)
MEDIA_ACCEL_PREFIX = os.environ.get("MEDIA_ACCEL_PREFIX", "/protected-media/")

# Celery: no broker configured means tasks run eagerly, in the calling process.
BROKER_CONFIGURED = bool(os.environ.get("CELERY_BROKER_URL"))
# (The in-memory URL names a host only so that kombu does not warn that none was given.)
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or "memory://localhost/"
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", not BROKER_CONFIGURED)
CELERY_TASK_EAGER_PROPAGATES = True
# Where jobs run (annotation/jobs.py): "celery" sends them to the broker's workers; "threads"
# (the default without a broker) runs them in a pool of threads of the web process, so that a
# request never waits for a job (and is never killed by the server's timeout halfway through one).
JOB_RUNNER = os.environ.get("JOB_RUNNER") or ("celery" if BROKER_CONFIGURED else "threads")
if JOB_RUNNER not in ("celery", "threads"):
    raise ImproperlyConfigured(f"JOB_RUNNER must be celery or threads, not {JOB_RUNNER!r}.")
JOB_THREADS = int(os.environ.get("JOB_THREADS", "2"))
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND") or None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("CELERY_TASK_DEFAULT_QUEUE", "redline")
# Redis hands a task whose worker died before acknowledging it (acks late) to a worker again once
# this many seconds have passed since delivery. Keep it above the longest task (a study's scoring
# job): a task still running when it expires is delivered a second time (scoring jobs then hand
# over to the new delivery, see scoring/services.py).
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": int(os.environ.get("CELERY_VISIBILITY_TIMEOUT", "3600")),
}
# A Redis that hangs (stopped, or its machine unreachable) makes sending a job fail after this
# many seconds instead of holding the request: the job is kept and sent later (annotation.jobs).
# Set whatever the broker, so a broker URL changed at run time keeps it; other transports ignore it.
_broker_timeout = float(os.environ.get("CELERY_BROKER_TIMEOUT", "3"))
CELERY_BROKER_TRANSPORT_OPTIONS.update(socket_timeout=_broker_timeout, socket_connect_timeout=_broker_timeout)
# Sending a job tries twice: a job the broker does not take is kept and sent later anyway.
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.5}
if CELERY_BROKER_URL.startswith("filesystem://"):
    # `make demo` runs one worker beside the web server through files in var/: real
    # asynchronous jobs on one machine with nothing else installed.
    _broker_dir = VAR_DIR / "celery-broker"
    _broker_dir.mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS.update(
        data_folder_in=str(_broker_dir), data_folder_out=str(_broker_dir), store_processed=False,
        # The broadcasts of `celery inspect` and the worker's mailbox, also under var/ (kombu
        # would otherwise make a control/ folder wherever the worker starts).
        control_folder=str(_broker_dir / "control"),
    )

# Scoring jobs (scoring/services.py). Judges are the embedding models of CosPar, CosSen, HM-CF...
# ffmpeg's scene-change score (0..1) above which a frame counts as a shot change at clip import.
SHOT_CHANGE_THRESHOLD = float(os.environ.get("SHOT_CHANGE_THRESHOLD", "0.3"))
if not 0 < SHOT_CHANGE_THRESHOLD < 1:
    raise ImproperlyConfigured(
        f"SHOT_CHANGE_THRESHOLD must lie between 0 and 1, got {SHOT_CHANGE_THRESHOLD}"
    )

SCORING_JUDGES = env_list("SCORING_JUDGES", ["minilm", "e5-small"])
SCORING_ON_FINAL_VERDICT = env_bool("SCORING_ON_FINAL_VERDICT", True)
# Locking the overview, submitting to QC, approving and amending can be undone for this many seconds;
# until then the change stays the actor's own (a submission is not in the review queue yet).
UNDO_SECONDS = int(os.environ.get("UNDO_SECONDS", "10"))
# The study dashboard lists annotators with work left who have done nothing for this long.
IDLE_MINUTES = int(os.environ.get("IDLE_MINUTES", "30"))
# Metrics of the job queued by each final verdict; empty: edit size, the embedding metrics,
# and llmfacts_f1 when it is configured.
SCORING_VERDICT_METRICS = env_list("SCORING_VERDICT_METRICS", [])
# Items scored between two commits (and progress updates) of a job.
SCORING_CHUNK_SIZE = int(os.environ.get("SCORING_CHUNK_SIZE", "64"))
# A study job fans out into chunks (scoring/chunks.py): one metric family over the items of a few
# clips, this many items at most per family ("family=items,..."), so that a chunk takes seconds
# to a minute.
SCORING_STUDY_CHUNK_ITEMS = {
    "edit": 2000, "embedding": 400, "reference": 400, "llmfacts": 16,
    **{name: int(count) for name, _, count in (
        entry.partition("=") for entry in env_list("SCORING_STUDY_CHUNK_ITEMS", []))},
}
# Queues by need (docs/production.md, "Scaling out scoring"): each family's chunks go to its queue; empty means the
# default queue, so one worker does everything. Edit size and the reference metrics (CPU,
# METEOR's JVMs) go to SCORING_QUEUE_CPU, embedding judges to SCORING_QUEUE_EMBED, LLMFactsF1 to
# SCORING_QUEUE_LLM; a study job's planning runs on the default queue.
SCORING_QUEUES = {
    "edit": os.environ.get("SCORING_QUEUE_CPU", ""),
    "reference": os.environ.get("SCORING_QUEUE_CPU", ""),
    "embedding": os.environ.get("SCORING_QUEUE_EMBED", ""),
    "llmfacts": os.environ.get("SCORING_QUEUE_LLM", ""),
}
# The embedding judges' device ("cpu", "cuda", "cuda:1") and encode batch size on this worker.
SCORING_EMBED_DEVICE = os.environ.get("SCORING_EMBED_DEVICE", "cpu")
SCORING_EMBED_BATCH = int(os.environ.get("SCORING_EMBED_BATCH", "64"))
# What scoring computes slowly and identically for the same input (METEOR's statistics of a text
# pair, a judge's vector of a text) is kept in the database for every worker to reuse
# (scoring/shared_cache.py; `manage.py scoring_cache --clear` empties it). 0: each worker keeps
# only its own memory.
SCORING_SHARED_CACHE = env_bool("SCORING_SHARED_CACHE", True)
# The Java options of METEOR's JVMs (scoring/metrics/reference.py): memory and garbage collector,
# which change its speed, never its values. Each JVM may use about 3.3 GB with the default.
METEOR_JAVA_OPTIONS = env_list("METEOR_JAVA_OPTIONS", ["-Xmx3G", "-Xmn2G", "-XX:+UseSerialGC"])
# How many METEOR JVMs one worker runs at once; empty: one per CPU, at most 4. With several
# workers on one machine, give each its share of the cores (docs/production.md, "Scaling out scoring").
METEOR_JVMS = int(os.environ["METEOR_JVMS"]) if os.environ.get("METEOR_JVMS") else None
# A chunk whose family raised is tried this many more times (with backoff) before it is recorded
# failed with its reason; the other chunks go on.
SCORING_CHUNK_RETRIES = int(os.environ.get("SCORING_CHUNK_RETRIES", "2"))
SCORING_CHUNK_RETRY_SECONDS = float(os.environ.get("SCORING_CHUNK_RETRY_SECONDS", "5"))
# Live scores: a verdict that becomes final re-scores its clip's leave-out sets (and whatever
# else of the clip is stale) with the metrics of the study's latest study job, this many seconds
# later, so that verdicts in quick succession on one clip share one job.
SCORING_LIVE_SCORES = env_bool("SCORING_LIVE_SCORES", True)
SCORING_LIVE_DELAY_SECONDS = float(os.environ.get("SCORING_LIVE_DELAY_SECONDS", "10"))
# A running job whose last progress update is older than this may be taken over by another run.
SCORING_JOB_LEASE_SECONDS = int(os.environ.get("SCORING_JOB_LEASE_SECONDS", "900"))
# The same for a profile export, whose status file is its heartbeat.
PROFILE_JOB_LEASE_SECONDS = int(os.environ.get("PROFILE_JOB_LEASE_SECONDS", "900"))
# Profile exports (minutes of bootstrap on a large study) go to this queue when set, so that a
# worker of their own runs them and scoring never waits behind one.
PROFILE_QUEUE = os.environ.get("PROFILE_QUEUE", "")
# Each export keeps its files (up to tens of MB) until deleted: when one ends, the oldest ended
# exports of its study beyond this many are deleted (scoring.profile_jobs). 0 keeps them all.
PROFILE_EXPORTS_KEPT = int(os.environ.get("PROFILE_EXPORTS_KEPT", "20"))
if PROFILE_EXPORTS_KEPT < 0:
    raise ImproperlyConfigured(
        f"PROFILE_EXPORTS_KEPT must be 0 (keep every export) or more, not {PROFILE_EXPORTS_KEPT}.")
# A job found stalled (its process died) is sent again until it has been claimed this many times;
# then it is marked failed, saying why.
JOB_MAX_ATTEMPTS = int(os.environ.get("JOB_MAX_ATTEMPTS", "3"))
# Every worker runs job recovery this often (scoring.jobs_recovery): jobs kept while the broker did
# not answer are sent once it answers again, stalled jobs sent again or failed. 0 turns it off.
JOB_RECOVERY_SECONDS = float(os.environ.get("JOB_RECOVERY_SECONDS", "15"))
# The same job asked again by the same person within this many seconds (a repeated click) is the
# job already started, not a second one.
JOB_REPEAT_SECONDS = float(os.environ.get("JOB_REPEAT_SECONDS", "10"))
# LLMFactsF1 needs an OpenAI-compatible chat endpoint (vLLM, Ollama, llama.cpp server, APIs).
# Unset: llmfacts_f1 is left out of the default metrics; asking for it fails for it alone.
LLMFACTS_BASE_URL = os.environ.get("LLMFACTS_BASE_URL", "")
LLMFACTS_MODEL = os.environ.get("LLMFACTS_MODEL", "")
LLMFACTS_API_KEY = os.environ.get("LLMFACTS_API_KEY", "")
LLMFACTS_TIMEOUT_S = float(os.environ.get("LLMFACTS_TIMEOUT_S", "120"))
LLMFACTS_RETRIES = int(os.environ.get("LLMFACTS_RETRIES", "3"))
# How many requests one batch sends to the server at once (a GPU server batches them).
LLMFACTS_CONCURRENCY = int(os.environ.get("LLMFACTS_CONCURRENCY", "4"))
# auto: ask the server once whether it follows a JSON schema (response_format), else prompt +
# repair; json_schema / json_object: that response_format without asking; off: prompt + repair.
LLMFACTS_STRUCTURED_OUTPUT = os.environ.get("LLMFACTS_STRUCTURED_OUTPUT", "auto")
LLMFACTS_CACHE_DIR = Path(os.environ.get("LLMFACTS_CACHE_DIR", VAR_DIR / "llmfacts-cache"))

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Session (the pages) and token (scripts: `manage.py drf_create_token USER`). No HTTP
        # Basic: it would send passwords with every request and bypass sign-in throttling.
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "annotation.api.schema.RedlineAutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 100,
    # `?format=` names an import's file format (jsonl, clip-cc, fm-v2t), not a renderer.
    "URL_FORMAT_OVERRIDE": None,
    # Every 400 carries a `detail` sentence naming the field, for the pages to show.
    "EXCEPTION_HANDLER": "annotation.api.errors.exception_handler",
    # JSON too deep, numbers too long and NUL characters are refused with a 400 naming the place.
    "DEFAULT_PARSER_CLASSES": [
        "annotation.api.parsers.StrictJSONParser",
        "rest_framework.parsers.MultiPartParser",
        "rest_framework.parsers.FormParser",
    ],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Redline API",
    "DESCRIPTION": "Correct video captions and learn how captioning models fail.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    # Swagger UI's files come from the drf-spectacular-sidecar package: no CDN needed.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # Clips rate scene complexity and motion intensity on the same scale: one enum, one name.
    "ENUM_NAME_OVERRIDES": {
        "ClipLevelEnum": [("low", "Low"), ("medium", "Medium"), ("high", "High"),
                          ("unclear", "Unclear")],
        "AssignmentDesignEnum": "annotation.models.AssignmentDesign.values",
        "CaptionLanguageEnum": "annotation.models.CaptionLanguage.values",
        "ParticipantStateEnum": "annotation.rules.recruitment.PARTICIPANT_STATES",
    },
}

# Largest caption, reference, clip-properties or score file an import takes, in megabytes (10^6 bytes):
# a larger one is refused in the request (413). 100,000 captions of two windows are 30 MB.
MAX_IMPORT_FILE_MB = int(os.environ.get("MAX_IMPORT_FILE_MB", "100"))
# Largest upload accepted through the API (clips), in bytes.
DATA_UPLOAD_MAX_MEMORY_SIZE = 50 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024

if not DEBUG:
    SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", True)
    CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", True)
    # The proxy in front (nginx, see docs/production.md) says whether the browser used HTTPS.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "31536000"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)

# Content-Security-Policy of every response (config/middleware.py): scripts and styles only from
# Redline's own files (no inline script, no event handler attributes; json_script data blocks are
# data, not scripts), clips and posters from the site itself (blob: for the player's frames).
CONTENT_SECURITY_POLICY = os.environ.get("CONTENT_SECURITY_POLICY") or "; ".join([
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data: blob:",
    "media-src 'self' blob:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
])

# Sign-in throttling (frontend/throttle.py), in fixed windows of LOGIN_FAILURE_WINDOW_SECONDS from
# the first failure: after LOGIN_FAILURES_PER_ACCOUNT_AND_ADDRESS failures an address may not try
# that account again, after LOGIN_FAILURES_PER_ADDRESS it may not try any; after
# LOGIN_FAILURES_PER_ACCOUNT (from many addresses) each address may try the account once every
# LOGIN_SLOWED_SECONDS. A new password lifts the account's limits.
LOGIN_FAILURES_PER_ACCOUNT_AND_ADDRESS = int(os.environ.get("LOGIN_FAILURES_PER_ACCOUNT_AND_ADDRESS", "5"))
LOGIN_FAILURES_PER_ADDRESS = int(os.environ.get("LOGIN_FAILURES_PER_ADDRESS", "20"))
LOGIN_FAILURES_PER_ACCOUNT = int(os.environ.get("LOGIN_FAILURES_PER_ACCOUNT", "100"))
LOGIN_SLOWED_SECONDS = int(os.environ.get("LOGIN_SLOWED_SECONDS", "10"))
LOGIN_FAILURE_WINDOW_SECONDS = int(os.environ.get("LOGIN_FAILURE_WINDOW_SECONDS", "900"))
if LOGIN_FAILURES_PER_ACCOUNT <= LOGIN_FAILURES_PER_ACCOUNT_AND_ADDRESS:
    # Else one address alone would slow the account for its owner everywhere.
    raise ImproperlyConfigured(
        f"LOGIN_FAILURES_PER_ACCOUNT ({LOGIN_FAILURES_PER_ACCOUNT}) must be well above "
        f"LOGIN_FAILURES_PER_ACCOUNT_AND_ADDRESS ({LOGIN_FAILURES_PER_ACCOUNT_AND_ADDRESS}).")
# Behind a proxy every connection comes from the proxy: name the header carrying the browser's
# address (HTTP_X_REAL_IP with the nginx lines of docs/production.md, or HTTP_X_FORWARDED_FOR) and how many
# proxies in front append to it; the address is the one the right-most trusted proxy wrote
# (entries further left are whatever the client sent). Unset: the connection's address.
# Opening recruitment links (frontend/views_recruitment.py): each address may open them this
# often per window; more is answered 429 (against guessing links or participant ids).
RECRUITMENT_OPENS_PER_ADDRESS = int(os.environ.get("RECRUITMENT_OPENS_PER_ADDRESS", "60"))
RECRUITMENT_WINDOW_SECONDS = int(os.environ.get("RECRUITMENT_WINDOW_SECONDS", "600"))
CLIENT_ADDRESS_HEADER = os.environ.get("CLIENT_ADDRESS_HEADER", "")
TRUSTED_PROXY_COUNT = int(os.environ.get("TRUSTED_PROXY_COUNT", "1"))
# Django's cache holds the progress of running caption imports (written
# by a worker, read by the web): shared by every process through Redis when CACHE_URL is set
# (production), through files in var/cache otherwise (the demo's web server and worker, one machine).
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                "LOCATION": os.environ["CACHE_URL"]}
    if os.environ.get("CACHE_URL")
    else {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
          "LOCATION": str(VAR_DIR / "cache")}
}
# Sessions stay in the database alone (Django's default), not read through the cache: with
# `cached_db`, Redis would become a dependency of every request, and while it is stopped or hung
# nobody could sign in (a new session asks the cache whether its key exists) and every request
# would wait on it. The one indexed read it saves is not worth an outage (tests/test_sessions.py).
# config.sessions is Django's database store with its read prepared (annotation.prepared).
SESSION_ENGINE = "config.sessions"
# Django's ModelBackend with the user's read prepared, for the same reason (config/auth.py).
AUTHENTICATION_BACKENDS = ["config.auth.ModelBackend"]

# E-mail (invitations): Django's own settings, read from the environment under their own names.
# Unset: the console backend prints each message to the server's output (nothing leaves the
# machine); `make demo` writes them as files under var/mail (the file-based backend). A server
# sets EMAIL_BACKEND=django.core.mail.backends.smtp.EmailBackend and the SMTP server's address.
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND") or "django.core.mail.backends.console.EmailBackend"
EMAIL_FILE_PATH = os.environ.get("EMAIL_FILE_PATH") or str(VAR_DIR / "mail")
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = int(os.environ.get("EMAIL_PORT", "25"))
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    raise ImproperlyConfigured("EMAIL_USE_TLS (STARTTLS) and EMAIL_USE_SSL (implicit TLS) exclude each other: set one.")
# An SMTP server that does not answer holds the request that sends for this long at most; the
# invitation is kept, marked failed with the error, and can be sent again from the members page.
EMAIL_TIMEOUT = float(os.environ.get("EMAIL_TIMEOUT", "10"))
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "Redline <redline@localhost>")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}
