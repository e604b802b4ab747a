"""How the API words refusals: every 400 carries a `detail` sentence naming the field.

DRF answers a serializer's refusal with the errors keyed by field, nested like the body
(``{"changes": {"windows": [{}, {"start": ["A valid number is required."]}]}}``). Pages show
`detail`, so this handler adds one that spells the place out: ``changes.windows[1].start: A valid
number is required.`` The keyed errors stay beside it for programs.
"""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ValidationError
from rest_framework.views import exception_handler as drf_exception_handler


def error_lines(errors: Any, place: str = "") -> list[str]:
    """`place: message` for every message in DRF's nested errors, in the body's order."""
    if isinstance(errors, dict):
        lines = []
        for key, value in errors.items():
            if key == "non_field_errors":  # about the object itself: the body, at the top
                inner = place or "body"
            elif isinstance(key, int):  # ListField keys its children's errors by position
                inner = f"{place}[{key}]"
            else:
                inner = f"{place}.{key}" if place else str(key)
            lines += error_lines(value, inner)
        return lines
    if isinstance(errors, list):
        if all(not isinstance(item, (dict, list)) for item in errors):
            return [f"{place}: {item}" if place else str(item) for item in errors]
        lines = []
        for number, item in enumerate(errors):
            if item:
                lines += error_lines(item, f"{place}[{number}]")
        return lines
    return [f"{place}: {errors}" if place else str(errors)]


def exception_handler(exc, context):
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(exc, ValidationError):
        data = response.data
        if isinstance(data, dict) and "detail" not in data:
            response.data = {"detail": " ".join(error_lines(data)), **data}
        elif isinstance(data, list):
            response.data = {"detail": " ".join(error_lines(data)), "errors": data}
    return response


def not_found(request, exception):
    """404 for a URL no route matches: JSON under /api/, as every API answer is; else the page."""
    from django.http import JsonResponse
    from django.views.defaults import page_not_found

    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found."}, status=404)
    return page_not_found(request, exception)
