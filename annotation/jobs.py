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
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from celery import Task
from django.conf import settings
from django.db import InterfaceError, OperationalError, connections
from django.utils.module_loading import import_string

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
        if job_id is not None:
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
