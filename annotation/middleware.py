"""Refusals that hold for every page and API endpoint alike."""

from __future__ import annotations

from django.http import HttpResponseBadRequest, JsonResponse


class RefuseUnstorableQuery:
    """Answer 400 to a query string with a NUL character, naming the parameter.

    Query parameters end up in database lookups (a clip name, a model alias), and PostgreSQL
    refuses NUL in text: without this the lookup fails with a server error.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        for key, values in request.GET.lists():
            if "\x00" in key or any("\x00" in value for value in values):
                name = key.replace("\x00", "\\u0000")
                message = f"Query parameter {name!r} contains a NUL character (%00)."
                if request.path.startswith("/api/"):
                    return JsonResponse({"detail": message, name: [message]}, status=400)
                return HttpResponseBadRequest(message, content_type="text/plain; charset=utf-8")
        return self.get_response(request)
