"""A study's consent text as text: checked before it is stored. Pure: no Django.

The text is Markdown written by the study's admins and shown to every participant before
anything else; it is rendered exactly as the guidelines are (annotation.rules.guidelines.render:
raw HTML off, then the nh3 allow-list), so nothing in it runs.
"""

from __future__ import annotations

from typing import Any

# A consent form of a few pages, in UTF-8 bytes: long enough for an information sheet, short
# enough to read before starting.
TEXT_MAX_BYTES = 50_000


def text_problem(text: Any) -> str | None:
    """Why `text` cannot be a study's consent text, or None."""
    if not isinstance(text, str):
        return "The consent text must be text (Markdown)."
    size = len(text.encode("utf-8"))
    if size > TEXT_MAX_BYTES:
        return (f"The consent text is {size:,} bytes long; the limit is {TEXT_MAX_BYTES:,} bytes (50 kB). "
                "Shorten it or link to a longer information sheet.")
    if "\x00" in text:
        return "The consent text contains a NUL character (\\u0000), which cannot be stored."
    return None
