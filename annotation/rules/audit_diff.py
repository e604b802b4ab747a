"""What an autosave changed, small enough to keep for every save.

The workspace saves every few seconds. Recording the whole pass before and after each save
would store an overview of 50,000 characters twice per keystroke burst; instead a save's audit
event records only the fields that changed. A changed text is a patch (where the change starts,
how many characters were removed, the text inserted), so an event is about as large as what the
person typed since the last save. Replaying the patches in order from an empty pass gives every
version. Pure code without Django.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def text_patch(old: str, new: str) -> dict[str, Any]:
    """The one edit that turns `old` into `new`: replace `delete` characters at `at` with `insert`.

    Common text at both ends is left out, so typing in the middle of a long text gives a small
    patch. :func:`apply_text_patch` replays it:
    ``apply_text_patch(old, text_patch(old, new)) == new``.
    """
    limit = min(len(old), len(new))
    start = 0
    while start < limit and old[start] == new[start]:
        start += 1
    end = 0
    while end < limit - start and old[len(old) - 1 - end] == new[len(new) - 1 - end]:
        end += 1
    return {"at": start, "delete": len(old) - start - end, "insert": new[start:len(new) - end]}


def apply_text_patch(text: str, patch: Mapping[str, Any]) -> str:
    at, delete = patch["at"], patch["delete"]
    inserted: str = patch["insert"]
    return text[:at] + inserted + text[at + delete:]


def _leaves(snapshot: Mapping[str, Any]) -> dict[str, Any]:
    """A pass snapshot as {field path: value}; windows are keyed by their index, not position."""
    flat: dict[str, Any] = {}
    for part in ("overview", "segmentation"):
        for key, value in (snapshot.get(part) or {}).items():
            flat[f"{part}.{key}"] = value
    for window in snapshot.get("windows") or []:
        for key, value in window.items():
            if key != "index":
                flat[f"window:{window['index']}.{key}"] = value
    return flat


def pass_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(before, after) for a save's audit event: only the fields that changed, by path
    (``overview.text``, ``window:2.scene``, ``segmentation.windows``).

    A changed text field appears in `after` as a :func:`text_patch` from its previous value
    (absent from `before`, since the patch says what it replaced); any other field appears with
    its old value in `before` and its new value in `after`.
    """
    old, new = _leaves(before), _leaves(after)
    removed: dict[str, Any] = {}
    added: dict[str, Any] = {}
    for path in sorted(old.keys() | new.keys()):
        was, now = old.get(path), new.get(path)
        if was == now:
            continue
        if isinstance(now, str) and isinstance(was, str | None) and path.endswith(TEXT_FIELDS):
            added[path] = text_patch(was or "", now)
        else:
            removed[path], added[path] = was, now
    return removed, added


# The free-text fields of a pass: stored as patches. Verdicts are strings too, but short.
TEXT_FIELDS = (".text", ".scene", ".shot")
