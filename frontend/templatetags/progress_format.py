"""Number formats of the progress page: shares in percent, seconds as durations, gaps as a dash."""

from __future__ import annotations

from django import template

register = template.Library()
DASH = "—"


@register.filter
def percent(value: float | None) -> str:
    return DASH if value is None else f"{100 * value:.0f}%"


@register.filter
def seconds(value: float | None) -> str:
    if value is None:
        return DASH
    if value < 60:
        return f"{value:.0f} s"
    minutes, rest = divmod(round(value), 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


@register.filter
def decimal(value: float | None, places: int = 2) -> str:
    return DASH if value is None else f"{value:.{int(places)}f}"
