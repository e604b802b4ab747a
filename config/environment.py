"""Every environment variable Redline reads, in one table.

``config/settings.py`` reads them; the documentation's Configuration page is built from this
table (``docs/hooks.py``), and ``tests/test_environment_table.py`` fails when a variable is read
anywhere in the code but missing here, or listed here but read nowhere, so the two cannot drift.
Defaults and meanings are written for the person setting up a server.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Variable:
    names: tuple[str, ...]
    default: str
    meaning: str


VARIABLES = (
    Variable(
        ('DEBUG',),
        '`1`',
        'with `0`, a missing, short (< 32 characters) or development `SECRET_KEY` is refused at '
        'start; with `1`, an `ALLOWED_HOSTS` that is not local is',
    ),
    Variable(
        ('SECURE_SSL_REDIRECT', 'SECURE_HSTS_SECONDS', 'SECURE_HSTS_INCLUDE_SUBDOMAINS', 'SECURE_HSTS_PRELOAD'),
        '`1`, `31536000`, `1`, `1` when `DEBUG=0`',
        'HTTPS redirect and HSTS (read only with `DEBUG=0`)',
    ),
    Variable(
        ('SESSION_COOKIE_SECURE', 'CSRF_COOKIE_SECURE'),
        '`1`, `1` when `DEBUG=0`',
        'send the sign-in and CSRF cookies over HTTPS only (read only with `DEBUG=0`)',
    ),
    Variable(
        ('CONTENT_SECURITY_POLICY',),
        "Redline's own files only",
        'the Content-Security-Policy of every response; the default allows scripts, styles, clips and'
        ' posters from the site itself and nothing inline',
    ),
    Variable(
        ('CACHE_URL',),
        'unset: files in `var/cache` (one machine)',
        'e.g. `redis://host:6379/1`: the progress of running caption imports, shared by every web '
        'process and worker',
    ),
    Variable(
        ('CLIENT_ADDRESS_HEADER',),
        "unset: the connection's address",
        'e.g. `HTTP_X_REAL_IP` behind nginx, or `HTTP_X_FORWARDED_FOR`',
    ),
    Variable(
        ('TRUSTED_PROXY_COUNT',),
        '`1`',
        'how many proxies in front append to `CLIENT_ADDRESS_HEADER`; the address is the entry the '
        'right-most of them wrote',
    ),
    Variable(
        (
            'LOGIN_FAILURES_PER_ACCOUNT_AND_ADDRESS',
            'LOGIN_FAILURES_PER_ADDRESS',
            'LOGIN_FAILURES_PER_ACCOUNT',
            'LOGIN_SLOWED_SECONDS',
            'LOGIN_FAILURE_WINDOW_SECONDS',
        ),
        '`5`, `20`, `100`, `10`, `900`',
        'sign-in throttling (see "Running it for real"); the per-account limit must be above the '
        'per-account-and-address one',
    ),
    Variable(
        ('RECRUITMENT_OPENS_PER_ADDRESS', 'RECRUITMENT_WINDOW_SECONDS'),
        '`60`, `600`',
        'how often one address may open recruitment links (pages and starts alike) per window of '
        'seconds; more is refused with 429 until the window passes. Participants in one room behind '
        'one address share it',
    ),
    Variable(
        ('MAX_IMPORT_FILE_MB',),
        '`100`',
        'largest caption, reference or clip-properties file an import takes (413 above it)',
    ),
    Variable(
        ('SECRET_KEY',),
        'a development key',
        "Django's signing key; with each study's own key it also seals the crowd participants' "
        "platform ids (for paying them): keep it, or put the old one in `SECRET_KEY_FALLBACKS`",
    ),
    Variable(
        ('SECRET_KEY_FALLBACKS',),
        'none',
        'earlier `SECRET_KEY`s, comma-separated: what they signed or sealed still opens',
    ),
    Variable(
        ('ALLOWED_HOSTS',),
        '`127.0.0.1,localhost,[::1]` when DEBUG, else empty',
        'comma-separated host names',
    ),
    Variable(
        ('CSRF_TRUSTED_ORIGINS',),
        'empty',
        'e.g. `https://redline.example.org`',
    ),
    Variable(
        ('DATABASE_URL',),
        '`sqlite:///var/redline.sqlite3`',
        'e.g. `postgres://user:pw@host:5432/redline`',
    ),
    Variable(
        ('DATABASE_CONN_MAX_AGE',),
        '`60`',
        'seconds a web process keeps its database connection open (checked before reuse)',
    ),
    Variable(
        ('DATABASE_PREPARED_STATEMENTS',),
        '`1`',
        'PostgreSQL only: bind parameters on the server and reuse the plan of a statement run twice on a '
        'connection (a third to a half of the hot requests\' database time); `0` behind a pooler that '
        'does not keep prepared statements, such as PgBouncer before 1.21 in transaction mode',
    ),
    Variable(
        ('CELERY_BROKER_URL',),
        'unset: jobs run in threads of the web process',
        'e.g. `redis://host:6379/0`',
    ),
    Variable(
        ('CELERY_TASK_DEFAULT_QUEUE', 'CELERY_RESULT_BACKEND', 'CELERY_TASK_ALWAYS_EAGER'),
        '`redline`, unset, `1` without a broker',
        "Celery's queue for every job without a queue of its own, its result store (Redline keeps job"
        ' state in the database and needs none), and whether tasks run in the calling process (the '
        "tests' setting)",
    ),
    Variable(
        ('JOB_RUNNER', 'JOB_THREADS'),
        '`celery` with a broker, else `threads`',
        'where jobs run: Celery workers, or `JOB_THREADS` (default 2) threads of the web process',
    ),
    Variable(
        ('JOB_MAX_ATTEMPTS',),
        '`3`',
        'a job whose process died is sent again until this many of its runs died without progress'
        ' (a caption import: until claimed this often), then marked failed',
    ),
    Variable(
        ('SCORING_JOB_LEASE_SECONDS', 'PROFILE_JOB_LEASE_SECONDS'),
        '`900`, `900`',
        'a running job silent this long (no heartbeat, no progress) counts as dead and is sent again;'
        ' so is a job queued this long, whose message the broker may have lost (a Redis restarted '
        'without its data), once per lease (`SCORING_JOB_LEASE_SECONDS` also covers caption imports)',
    ),
    Variable(
        ('REDLINE_VAR_DIR',),
        '`var`',
        "the folder of the SQLite database, the file cache, the demo's broker and the LLM answer "
        'cache',
    ),
    Variable(
        ('JOB_RECOVERY_SECONDS',),
        '`15`',
        'every worker runs job recovery this often: jobs kept while the broker did not answer are '
        'sent, stalled jobs sent again or failed (`0`: only at the worker\'s start)',
    ),
    Variable(
        ('JOB_REPEAT_SECONDS',),
        '`10`',
        'the same profile export or caption file asked again by the same person this soon, while '
        'the first is unfinished, is that job (a repeated click)',
    ),
    Variable(
        ('CELERY_BROKER_TIMEOUT',),
        '`3`',
        'seconds a Redis broker may take to answer before sending a job counts as failed (the job '
        'is kept and sent later): a hung Redis does not hold a request',
    ),
    Variable(
        ('MEDIA_ROOT',),
        '`var/media`',
        'clip files, proxies and posters',
    ),
    Variable(
        ('STATIC_ROOT',),
        '`staticfiles`',
        'where `collectstatic` writes',
    ),
    Variable(
        ('MEDIA_X_ACCEL_REDIRECT',),
        '`0`',
        '`1`: let nginx stream clips from `MEDIA_ACCEL_PREFIX`',
    ),
    Variable(
        ('MEDIA_ACCEL_PREFIX',),
        '`/protected-media/`',
        "nginx's internal location for `MEDIA_ROOT`",
    ),
    Variable(
        ('LOG_LEVEL',),
        '`WARNING`',
        'root log level',
    ),
    Variable(
        ('CELERY_VISIBILITY_TIMEOUT',),
        '`3600`',
        'seconds before Redis hands an unacknowledged job (its worker died) to another worker',
    ),
    Variable(
        ('IDLE_MINUTES',),
        '`30`',
        'the study dashboard lists annotators with work left who did nothing in the study for this '
        'long',
    ),
    Variable(
        ('UNDO_SECONDS',),
        '`10`',
        'how long locking the overview, submitting, approving and amending can be undone by whoever '
        "did it; until then a submission is not in the review queue (`0`: no undo); a study's own "
        'undo time replaces it',
    ),
    Variable(
        ('SHOT_CHANGE_THRESHOLD',),
        '`0.3`',
        "ffmpeg's scene-change score (0–1) above which a frame starts a new shot, when clips are "
        'imported; lower finds more cuts',
    ),
    Variable(
        ('SCORING_JUDGES',),
        '`minilm,e5-small`',
        'embedding judges: `minilm` and `e5-small` ship inside PyPI packages; any '
        'sentence-transformers model name or path also works (with network access or a local copy)',
    ),
    Variable(
        ('SCORING_ON_FINAL_VERDICT',),
        '`1`',
        'score each verdict when it becomes final',
    ),
    Variable(
        ('SCORING_VERDICT_METRICS',),
        'edit size and embedding metrics',
        'metrics of the per-verdict jobs',
    ),
    Variable(
        ('SCORING_CHUNK_SIZE',),
        '`64`',
        'items per committed step of a verdict scoring job',
    ),
    Variable(
        ('SCORING_STUDY_CHUNK_ITEMS',),
        '`edit=2000,embedding=400,reference=400,llmfacts=16`',
        'most items in one chunk of a study job, per family (any you set replace those)',
    ),
    Variable(
        ('SCORING_QUEUE_CPU', 'SCORING_QUEUE_EMBED', 'SCORING_QUEUE_LLM'),
        'unset: the default queue',
        'the queues of edit size and reference metrics, embedding judges, and LLMFactsF1 chunks '
        '("Scaling out scoring")',
    ),
    Variable(
        ('PROFILE_QUEUE',),
        'unset: the default queue',
        'the queue of profile exports, so that a worker of their own runs them and a long export '
        'never holds up scoring ("Scaling out scoring")',
    ),
    Variable(
        ('PROFILE_EXPORTS_KEPT',),
        '`20`',
        'profile exports kept per study: when one ends, the oldest finished or failed ones beyond '
        'this many are deleted (never one queued or running, never the final profile of a closed '
        'study); `0` keeps them all',
    ),
    Variable(
        ('SCORING_EMBED_DEVICE', 'SCORING_EMBED_BATCH'),
        '`cpu`, `64`',
        "where this worker's sentence-transformers judges run (`cuda`, `cuda:1`) and their encode "
        'batch size',
    ),
    Variable(
        ('SCORING_SHARED_CACHE',),
        '`1`',
        "keep METEOR's pair statistics and the judges' vectors in the database for every worker "
        '("Scaling out scoring"); `0`: each worker keeps only its own memory',
    ),
    Variable(
        ('METEOR_JVMS',),
        'one per CPU, at most 4',
        'METEOR JVMs one worker runs at once',
    ),
    Variable(
        ('METEOR_JAVA_OPTIONS',),
        '`-Xmx3G,-Xmn2G,-XX:+UseSerialGC`',
        "the Java options of METEOR's JVMs (comma-separated): memory and collector change their "
        'speed, never their values',
    ),
    Variable(
        ('SCORING_CHUNK_RETRIES', 'SCORING_CHUNK_RETRY_SECONDS'),
        '`2`, `5`',
        'a chunk whose family raised is tried again this often (backoff doubling from this delay) '
        'before it is recorded failed',
    ),
    Variable(
        ('SCORING_LIVE_SCORES', 'SCORING_LIVE_DELAY_SECONDS'),
        '`1`, `10`',
        "a verdict that becomes final re-scores its clip with the metrics of the study's latest study"
        ' job, this many seconds later (one job for verdicts in quick succession); nothing until the '
        'study was scored once as a whole',
    ),
    Variable(
        ('EMAIL_BACKEND',),
        "unset: Django's console backend (messages printed, nothing sent)",
        'where invitation e-mails go: `django.core.mail.backends.smtp.EmailBackend` sends them '
        'through the SMTP server below; `make demo` uses `django.core.mail.backends.filebased.EmailBackend`'
        ' (files in `EMAIL_FILE_PATH`)',
    ),
    Variable(
        ('EMAIL_FILE_PATH',),
        '`var/mail`',
        "the file-based backend's folder, one file per message",
    ),
    Variable(
        ('EMAIL_HOST', 'EMAIL_PORT', 'EMAIL_HOST_USER', 'EMAIL_HOST_PASSWORD'),
        '`localhost`, `25`, empty, empty',
        'the SMTP server and, when it asks for one, the account to sign in with',
    ),
    Variable(
        ('EMAIL_USE_TLS', 'EMAIL_USE_SSL'),
        '`0`, `0`',
        'STARTTLS on the SMTP connection (usually port 587), or TLS from the start (usually port '
        '465); not both',
    ),
    Variable(
        ('EMAIL_TIMEOUT',),
        '`10`',
        'seconds an SMTP server may take to answer; a message it refuses or never takes is kept as '
        'failed, with the error, on the members page, to send again',
    ),
    Variable(
        ('DEFAULT_FROM_EMAIL',),
        '`Redline <redline@localhost>`',
        "the invitations' sender",
    ),
    Variable(
        ('LLMFACTS_BASE_URL', 'LLMFACTS_MODEL', 'LLMFACTS_API_KEY'),
        'unset',
        'an OpenAI-compatible chat-completions endpoint (vLLM, Ollama, llama.cpp server, hosted APIs)'
        ' for LLMFactsF1; unset, LLMFactsF1 is not run',
    ),
    Variable(
        ('LLMFACTS_TIMEOUT_S', 'LLMFACTS_RETRIES', 'LLMFACTS_CACHE_DIR'),
        '`120`, `3`, `var/llmfacts-cache`',
        'its timeout, retries and answer cache',
    ),
    Variable(
        ('LLMFACTS_CONCURRENCY',),
        '`4`',
        'requests one batch sends to the LLM server at once',
    ),
    Variable(
        ('LLMFACTS_STRUCTURED_OUTPUT',),
        '`auto`',
        '`auto` (ask the server once whether it follows a JSON schema), `json_schema`, `json_object`,'
        ' or `off` (prompts and repair calls)',
    ),
)


def markdown_table() -> str:
    """The table of the Configuration page."""
    lines = ["| variable | default | meaning |", "|---|---|---|"]
    for variable in VARIABLES:
        names = ", ".join(f"`{name}`" for name in variable.names)
        lines.append(f"| {names} | {variable.default} | {variable.meaning} |")
    return "\n".join(lines) + "\n"
