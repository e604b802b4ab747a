"""Refusals that hold for every page and API endpoint alike."""

from __future__ import annotations

from django.http import HttpResponseBadRequest, JsonResponse


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
