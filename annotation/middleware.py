"""Refusals that hold for every page and API endpoint alike."""

from __future__ import annotations

import logging

from django.http import HttpResponse, HttpResponseBadRequest, JsonResponse
from django.utils.html import escape

logger = logging.getLogger(__name__)


def _refusal(request, message: str, **keyed: list[str]):
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": message, **keyed}, status=400)
    return HttpResponseBadRequest(message, content_type="text/plain; charset=utf-8")


class RefuseUnstorableQuery:
    """Answer 400 to an address or a query string with a NUL character, naming the place.

    Parts of the address (a clip's name in /studies/<slug>/clips/<name>/) and query parameters
    end up in database lookups, and PostgreSQL refuses NUL in text: without this the lookup
    fails with a server error.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if "\x00" in request.path:
            return _refusal(request, "The address contains a NUL character (%00); no page or "
                            "record has such a name.")
        for key, values in request.GET.lists():
            if "\x00" in key or any("\x00" in value for value in values):
                name = key.replace("\x00", "\\u0000")
                message = f"Query parameter {name!r} contains a NUL character (%00)."
                return _refusal(request, message, **{name: [message]})
        return self.get_response(request)


DATABASE_DOWN = ("The database is not answering (it may be restarting). Nothing was lost that "
                 "you saw saved; try again in a minute.")
DISK_FULL = ("The server's disk is full, so this could not be stored. Nothing else changed; "
             "ask the site admin to free space, then try again.")
BODY_CUT = "The request's body could not be read to its end (the connection was cut); nothing was stored."
RETRY_AFTER_SECONDS = 30


# The database's own refusal of a closed or archived study's rows (migration 0026), for a path
# whose service did not ask the study's state first.
CLOSED_ROWS_MARK = "its rows do not change"
CLOSED_ROWS = "This study is closed or archived: it can be read and exported; nothing in it changes."


def _failure(exception: Exception) -> tuple[int, str, str] | None:
    """``(status, title, message)`` when the exception is a refusal that every path answers
    alike: the study's state refusing a write (409, annotation.services.study_state), the
    database unreachable or the disk full (503, to be tried again later), the request's body cut
    short by the client (400); None for anything else."""
    import errno

    from django.db import DatabaseError, InterfaceError, OperationalError
    from django.http import UnreadablePostError

    from annotation.errors import StudyStateRefused

    if isinstance(exception, StudyStateRefused):
        return 409, "The study's state refuses this", str(exception)
    if isinstance(exception, DatabaseError) and CLOSED_ROWS_MARK in str(exception):
        return 409, "The study's state refuses this", CLOSED_ROWS
    if isinstance(exception, (OperationalError, InterfaceError)):
        return 503, "Try again in a minute", DATABASE_DOWN
    if isinstance(exception, UnreadablePostError):
        return 400, "The request was cut short", BODY_CUT
    if isinstance(exception, OSError) and exception.errno in (errno.ENOSPC, errno.EDQUOT):
        # 503, not 507: a full disk is the server's passing trouble, and a client may try again
        # once the admin frees space (every 5xx but a 503 with Retry-After reads as a fault).
        return 503, "The disk is full", DISK_FULL
    return None


def _wants_json(request) -> bool:
    return request.path.startswith("/api/") or request.content_type == "application/json"


class AnswerWhenAServiceFails:
    """Answer a clear refusal, not a server error, when the study's state refuses a write (409,
    the same sentence on every path), the database cannot be reached (PostgreSQL restarting, the
    network to it cut) or a write finds the disk full (503 with Retry-After naming the problem):
    JSON under /api/ and to a JSON request, a short page elsewhere. A body the client cut short
    is a 400 (nobody reads it; the log stays quiet). Nothing here touches the database, which
    may be down."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method in ("POST", "PUT", "PATCH", "DELETE") and request.content_type == "application/json":
            # A JSON body is read here, whole, so that one the client cut short is the 400 below:
            # read first by the CSRF check, which swallows the error (Django's CsrfViewMiddleware
            # catches UnreadablePostError), the view would meet RawPostDataException, a 500.
            from django.core.exceptions import RequestDataTooBig
            from django.http import UnreadablePostError

            try:
                request.body  # noqa: B018 - read for its side effect: the body kept whole
            except UnreadablePostError as error:
                return self.process_exception(request, error)
            except RequestDataTooBig:
                pass  # the view refuses it as before (nothing was read)
        return self.get_response(request)

    def process_exception(self, request, exception):
        failure = _failure(exception)
        if failure is None:
            return None
        status, title, message = failure
        log = logger.warning if status < 500 else logger.error
        log("%s for %s %s: %s", title, request.method, request.path, exception)
        if _wants_json(request):
            # A state refusal names the state too, so that clients tell it from an edit conflict
            # (a 409 that carries `current`).
            state = {"state": exception.state} if hasattr(exception, "state") else {}
            response = JsonResponse({"detail": message, **state}, status=status)
        else:
            response = HttpResponse(
                f'<!doctype html><html lang="en"><meta charset="utf-8"><title>Redline: {title}'
                f"</title><main><h1>{title}</h1><p>{escape(message)}</p></main></html>",
                status=status, content_type="text/html; charset=utf-8")
        if status == 503:
            response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
