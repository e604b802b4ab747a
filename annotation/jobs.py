"""Where background jobs run: never inside a web request.

Every job (a scoring job, a profile export, a clip's proxy and poster) is sent with
:func:`job_send`, which takes the task by its dotted path: a service names the task it starts
and never imports it, so the imports run one way (a task module imports its services, a
service imports no task module). ``JOB_RUNNER`` (settings) decides where it runs:

- ``celery``: to the broker's workers (``CELERY_BROKER_URL``; the demo runs one beside the web
  server). With ``CELERY_TASK_ALWAYS_EAGER`` on, Celery itself runs the task in the calling
  process: the test suite does that to look at a job's results right after starting it.
- ``threads``: no broker is configured, so a small pool of threads in the same process runs the
  job; the request that started it answers at once and the page follows the job's progress.

A job whose process died (a restart, a worker killed for time or memory) stays "running" in the
database; each kind of job has a ``*_recover`` service that finds those by their heartbeat and
sends them again or marks them failed (see :func:`scoring.services.score_jobs_recover`).

**A broker that does not answer costs time, never a job.** Services send with
:func:`job_send_or_keep`: when Redis is stopped or restarting, the message is kept in the
database (:class:`~annotation.models.UnsentJob`) and the job's own record stays queued; the
workers' recovery clock (:mod:`scoring.jobs_recovery`, every ``JOB_RECOVERY_SECONDS``) sends it
with :func:`unsent_jobs_send` once the broker answers again. A task that gives up on a database
or broker error is kept the same way instead of failing its job: a job fails for good only for a
reason in its own data.

**One message per job.** Recovery sends a queued job again only when its message is really
gone: :func:`broker_look` reads what the broker holds (the messages waiting in its queues, and
those a worker took and has not acknowledged), and :meth:`BrokerLook.holds` says whether a job's
message is among them. A job that merely waits its turn behind a long queue gets no second
message (the soak's 30-minute run had 2,363 messages for 174 jobs when recovery went by time
alone: every lease, every waiting job got one more, and the workers chewed duplicates).
"""

from __future__ import annotations

import base64
import json
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from celery import Task
from django.conf import settings
from django.db import InterfaceError, OperationalError, connections
from django.utils.module_loading import import_string

from annotation.models import UnsentJob

logger = logging.getLogger(__name__)

RUNNERS = ("celery", "threads")

# Worth trying again: the database or broker was briefly unreachable. Every job's writes are
# upserts or one all-or-nothing transaction, so running it again cannot store anything twice.
TRANSIENT_ERRORS = (OperationalError, InterfaceError, ConnectionError, TimeoutError)


class JobTask(Task):
    """Base of the tasks that run one job record, its id the first argument: when the task
    gives up (retries spent, or an unexpected error), `job_failed` says so on the job."""

    @staticmethod
    def job_failed(*, job_id: int, error: str) -> None:
        raise NotImplementedError("a JobTask names the service that marks its job failed")

    def on_failure(self, exc, task_id, args, kwargs, einfo):
        job_id = args[0] if args else kwargs.get("job_id")
        if job_id is None:
            return
        if isinstance(exc, TRANSIENT_ERRORS) or broker_unreachable(exc):
            # The database or the broker was away for longer than the retries: not the job's
            # fault. It is kept to be sent again (its run claims it by this task id).
            queue = (getattr(self.request, "delivery_info", None) or {}).get("routing_key")
            try:
                job_keep(self.name, args=[job_id], task_id=task_id, queue=queue, error=exc)
                return
            except Exception:  # noqa: BLE001 - the database is still away: the lease recovers it
                logger.warning("job %s%s could not be kept to run again", self.name, (job_id,),
                               exc_info=True)
                return
        self.job_failed(job_id=job_id, error=f"{type(exc).__name__}: {exc}")

def broker_unreachable(error: BaseException) -> bool:
    """Whether sending failed because the broker did not answer (Redis stopped or restarting):
    such a job is left queued, and recovery sends it again (see the module docstring)."""
    from kombu.exceptions import OperationalError as BrokerError

    return isinstance(error, (BrokerError, ConnectionError, TimeoutError))


_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _thread_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(
                max_workers=max(1, settings.JOB_THREADS), thread_name_prefix="redline-job"
            )
        return _pool


def _run_here(task: Any, args: Sequence[Any], task_id: str | None) -> None:
    """Run the task in this thread, as a worker would: retries and failure hooks included."""
    try:
        task.apply(args=list(args), task_id=task_id, throw=False)
    except Exception:  # noqa: BLE001 - nobody waits on this thread: log, the job records the rest
        logger.exception("background job %s%s failed", task.name, tuple(args))
    finally:
        # This thread's database connections are its own; do not leave them open.
        connections.close_all()


def job_send(
    task: str | Any,
    *,
    args: Sequence[Any],
    task_id: str | None = None,
    queue: str | None = None,
    countdown: float | None = None,
) -> Future | None:
    """Start ``task(*args)`` away from the current request (see the module's docstring).

    ``task`` is a Celery task's dotted path (``"scoring.tasks.run_score_job"``), or the task.
    Returns the thread pool's future with the ``threads`` runner (tests wait on it), else None.
    Raises what the broker raises when it refuses the job (callers record that on the job), and
    ImportError when no task has that path. ``queue`` names the Celery queue (default: the
    task's route, else ``CELERY_TASK_DEFAULT_QUEUE``); ``countdown`` delays a Celery job by that
    many seconds (the job threads start it at once).
    """
    if isinstance(task, str):
        task = import_string(task)
    if settings.JOB_RUNNER == "threads":
        return _thread_pool().submit(_run_here, task, tuple(args), task_id)
    options: dict[str, Any] = {}
    if queue:
        options["queue"] = queue
    if countdown:
        options["countdown"] = countdown
    task.apply_async(args=list(args), task_id=task_id, **options)
    return None


def _task_path(task: str | Any) -> str:
    return task if isinstance(task, str) else task.name


def job_keep(task: str | Any, *, args: Sequence[Any], task_id: str | None = None,
             queue: str | None = None, error: BaseException | str = "") -> UnsentJob:
    """Keep a job that could not be sent, for :func:`unsent_jobs_send` (once per task and
    arguments, however often it is kept)."""
    path = _task_path(task)
    key = f"{path}:{json.dumps(list(args), separators=(',', ':'))}"[:400]
    kept, _ = UnsentJob.objects.update_or_create(
        key=key,
        defaults={"task": path, "args": list(args), "task_id": task_id or "", "queue": queue or "",
                  "error": str(error)[:1000]},
    )
    return kept


def job_send_or_keep(
    task: str | Any,
    *,
    args: Sequence[Any],
    task_id: str | None = None,
    queue: str | None = None,
    countdown: float | None = None,
) -> bool:
    """Send the job as :func:`job_send` does; when the broker does not answer, keep it to be
    sent once it answers again (see the module's docstring) and return False. Any other error
    is raised (the caller records it on the job)."""
    try:
        job_send(task, args=args, task_id=task_id, queue=queue, countdown=countdown)
    except Exception as error:
        if not broker_unreachable(error):
            raise
        logger.warning("job %s%s kept to send later: the broker did not answer (%s)",
                       _task_path(task), tuple(args), error)
        job_keep(task, args=args, task_id=task_id, queue=queue, error=error)
        return False
    return True


def unsent_jobs_send(*, limit: int = 500) -> list[str]:
    """Send the jobs kept while the broker did not answer, oldest first; stop at the first that
    the broker still refuses (it is kept). Of two recoveries at once, the one that removes a
    job's row sends it. Returns the tasks sent, as ``task(args)``."""
    sent: list[str] = []
    for kept in UnsentJob.objects.all()[:limit]:
        if not UnsentJob.objects.filter(pk=kept.pk).delete()[0]:
            continue  # another recovery took it
        try:
            job_send(kept.task, args=kept.args, task_id=kept.task_id or None,
                     queue=kept.queue or None)
        except Exception as error:
            job_keep(kept.task, args=kept.args, task_id=kept.task_id, queue=kept.queue, error=error)
            if broker_unreachable(error):
                break
            logger.exception("kept job %s could not be sent", kept)
            continue
        sent.append(f"{kept.task}{tuple(kept.args)}")
    if sent:
        logger.warning("sent %s job(s) kept while the broker did not answer", len(sent))
    return sent


def _args_key(args: Sequence[Any]) -> str:
    return json.dumps(list(args), separators=(",", ":"), default=str)


def task_name(task: str | Any) -> str:
    """The name a task's messages carry (a dotted path is imported to read it)."""
    if isinstance(task, str):
        try:
            return import_string(task).name
        except ImportError:
            return task
    return task.name


@dataclass(frozen=True)
class BrokerLook:
    """What the broker held when looked at: the (task name, arguments) of each message waiting
    in a queue, and of each message a worker took and has not acknowledged yet, with the time
    it took it (a worker killed meanwhile leaves its message there until the broker's visibility
    timeout). ``answered`` False: the broker did not answer, so nothing can be known (and
    nothing could be sent): every job counts as held."""

    waiting: frozenset[tuple[str, str]] = frozenset()
    delivered: Mapping[tuple[str, str], float] = field(default_factory=dict)
    answered: bool = True

    def holds(self, task: str | Any, args: Sequence[Any], *, taken_within: float | None = None) -> bool:
        """Whether a message of ``task(*args)`` is waiting in a queue, or (``taken_within``
        seconds given) was taken by a worker less than that long ago and not acknowledged."""
        if not self.answered:
            return True
        key = (task_name(task), _args_key(args))
        if key in self.waiting:
            return True
        if taken_within is None:
            return False
        taken = self.delivered.get(key)
        return taken is not None and time.time() - taken < taken_within


def _message_key(payload: Any) -> tuple[str, str] | None:
    """(task name, arguments) of a Celery message as kombu's Redis transport stores it."""
    if not isinstance(payload, dict):
        return None
    headers = payload.get("headers") or {}
    task = headers.get("task")
    if not task:
        return None
    try:
        body = payload.get("body")
        if (payload.get("properties") or {}).get("body_encoding") == "base64":
            body = base64.b64decode(body)
        args = json.loads(body)[0]  # protocol 2: [args, kwargs, embed]
    except (TypeError, ValueError, IndexError, KeyError):
        return None
    return task, _args_key(args)


def broker_queues() -> list[str]:
    """The queues jobs are sent to: the default one, the scoring families' and the exports' own."""
    names = [settings.CELERY_TASK_DEFAULT_QUEUE]
    names += [name for name in getattr(settings, "SCORING_QUEUES", {}).values() if name]
    names += [name for name in [getattr(settings, "PROFILE_QUEUE", "")] if name]
    return list(dict.fromkeys(names))


def broker_look() -> BrokerLook | None:
    """Read what the broker holds (see :class:`BrokerLook`). None when that cannot be read: jobs
    run in threads or eagerly, or the broker is not Redis; callers then go by time alone."""
    url = settings.CELERY_BROKER_URL
    if (settings.JOB_RUNNER != "celery" or getattr(settings, "CELERY_TASK_ALWAYS_EAGER", False)
            or not url.startswith(("redis://", "rediss://"))):
        return None
    import redis

    options = getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", {}) or {}
    prefix = options.get("global_keyprefix", "")
    separator = "\x06\x16"  # kombu's Redis transport: a queue's key for each priority step
    timeout = float(options.get("socket_timeout") or 5)
    try:
        client = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
        try:
            pipe = client.pipeline(transaction=False)
            keys = [f"{prefix}{queue}{suffix}" for queue in broker_queues()
                    for suffix in ("", *(f"{separator}{step}" for step in range(1, 10)))]
            for key in keys:
                pipe.lrange(key, 0, -1)
            pipe.hgetall(f"{prefix}unacked")
            pipe.zrange(f"{prefix}unacked_index", 0, -1, withscores=True)
            *queued, unacked, index = pipe.execute()
        finally:
            client.close()
    except Exception as error:  # noqa: BLE001 - not answering: nothing can be known this round
        logger.warning("the broker did not answer (%s): no job is sent again this round", error)
        return BrokerLook(answered=False)
    waiting = set()
    for messages in queued:
        for raw in messages:
            try:
                key = _message_key(json.loads(raw))
            except ValueError:
                continue
            if key is not None:
                waiting.add(key)
    taken_at = {tag.decode() if isinstance(tag, bytes) else tag: score for tag, score in index}
    delivered: dict[tuple[str, str], float] = {}
    for tag, raw in unacked.items():
        try:
            key = _message_key(json.loads(raw)[0])
        except (ValueError, IndexError, TypeError):
            continue
        if key is not None:
            tag = tag.decode() if isinstance(tag, bytes) else tag
            delivered[key] = max(delivered.get(key, 0.0), taken_at.get(tag, time.time()))
    return BrokerLook(frozenset(waiting), delivered)


def message_lost(look: BrokerLook | None, task: str | Any, args: Sequence[Any], *, running: bool,
                 lease_seconds: float) -> bool:
    """Whether a job that recovery found stalled needs another message. A queued job does when
    the broker holds none of its (not waiting in a queue, nor taken by a worker within the
    lease); a running one whose heartbeat stopped (its worker may be dead, its message then
    held until the broker's visibility timeout) does unless one is waiting in a queue. Without
    a look (no Redis broker) both do, as time alone says."""
    if look is None:
        return True
    return not look.holds(task, args, taken_within=None if running else lease_seconds)
