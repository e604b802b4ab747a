"""Shared helpers of Redline's management commands."""

from __future__ import annotations

from django.core.management.base import CommandError

from annotation.models import Study


def get_study(slug: str) -> Study:
    try:
        return Study.objects.get(slug=slug)
    except Study.DoesNotExist:
        known = ", ".join(Study.objects.values_list("slug", flat=True)) or "none yet"
        raise CommandError(
            f"No study {slug!r} (studies: {known}). Create one with `manage.py create_study`."
        ) from None
