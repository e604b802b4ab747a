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
RETRY_AFTER_SECONDS = 30


class AnswerWhileTheDatabaseIsDown:
    """Answer 503 with Retry-After, not a server error, when the database cannot be reached
    (PostgreSQL restarting, the network to it cut): JSON under /api/, a short page elsewhere.
    Nothing here touches the database, which is down."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        from django.db import InterfaceError, OperationalError

        if not isinstance(exception, (OperationalError, InterfaceError)):
            return None
        logger.warning("database unavailable for %s %s: %s", request.method, request.path,
                       exception)
        response = _unavailable(request, DATABASE_DOWN, status=503, title="Try again in a minute")
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response


def _unavailable(request, message: str, *, status: int, title: str):
    """A refusal that needs no database: JSON under /api/, else a page of its own."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": message}, status=status)
    return HttpResponse(
        f'<!doctype html><html lang="en"><meta charset="utf-8"><title>Redline: {title}</title>'
        f"<main><h1>{title}</h1><p>{escape(message)}</p></main></html>",
        status=status, content_type="text/html; charset=utf-8")


DISK_FULL = ("The server's disk is full, so this could not be stored. Nothing else changed; "
             "ask the site admin to free space, then try again.")


class AnswerWhenTheDiskIsFull:
    """Answer 507 (Insufficient Storage), not a server error, when a write to disk fails for
    lack of space (an upload, an export): JSON under /api/, a short page elsewhere."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        import errno

        if not isinstance(exception, OSError) or exception.errno not in (errno.ENOSPC,
                                                                          errno.EDQUOT):
            return None
        logger.error("disk full for %s %s: %s", request.method, request.path, exception)
        return _unavailable(request, DISK_FULL, status=507, title="The disk is full")
