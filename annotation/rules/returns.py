"""Returns that name units: which parts of an annotation QC sends back, and the replies.

Pure code without Django. A *unit* is one thing an annotator judges, named by a key:
"overview", "segmentation", or "window:<index>" (the window's index in the caption, from 0).
A return names one or more units, each with the reviewer's comment; those units reopen
for the annotator and the rest stay as submitted. A returned unit resubmitted unchanged
needs the annotator's reply, so that a disagreement is said rather than silently ignored.

A returned unit is stored as {"unit", "comment", "before", "reply"}: "before" is the
unit as the annotator had submitted it (from `pass_snapshot`), to tell whether it changed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

OVERVIEW = "overview"
SEGMENTATION = "segmentation"
WINDOW_PREFIX = "window:"


def window_unit(index: int) -> str:
    return f"{WINDOW_PREFIX}{index}"


def window_index(unit: str) -> int | None:
    """The window index of a window unit; None for the overview, the segmentation or junk."""
    if not unit.startswith(WINDOW_PREFIX):
        return None
    number = unit[len(WINDOW_PREFIX) :]
    return int(number) if number.isdigit() else None


def unit_label(unit: str) -> str:
    """The unit as people call it: Overview, Window 2 (counted from 1), Segmentation."""
    index = window_index(unit)
    if index is not None:
        return f"Window {index + 1}"
    return unit.capitalize()


def all_units(window_indices: Iterable[int]) -> list[str]:
    """Every unit of a caption with these windows, in the order the annotator meets them."""
    return [OVERVIEW, *(window_unit(i) for i in sorted(window_indices)), SEGMENTATION]


def parse_units(requested: Sequence[Any], window_indices: Iterable[int]) -> list[dict[str, str]]:
    """The units a reviewer names, checked: [{"unit", "comment"}] in the caption's order.

    ValueError lists every problem: no unit, an unknown unit, a unit named twice, a unit
    without a comment.
    """
    known = all_units(window_indices)
    problems: list[str] = []
    chosen: dict[str, str] = {}
    if not requested:
        problems.append(
            "Name at least one unit to return (the overview, a window or the segmentation)."
        )
    for number, item in enumerate(requested, start=1):
        if not isinstance(item, Mapping):
            problems.append(f"Returned unit {number}: expected {{unit, comment}}.")
            continue
        unit = str(item.get("unit", ""))
        comment = str(item.get("comment", "") or "").strip()
        if unit not in known:
            problems.append(
                f"Returned unit {number}: {unit!r} is not a unit of this caption "
                f"(one of: {', '.join(known)})."
            )
            continue
        if unit in chosen:
            problems.append(f"{unit_label(unit)} is named twice.")
            continue
        if not comment:
            problems.append(
                f"{unit_label(unit)}: say what to fix; every returned unit needs a comment."
            )
        chosen[unit] = comment
    if problems:
        raise ValueError(" ".join(problems))
    return [{"unit": unit, "comment": chosen[unit]} for unit in known if unit in chosen]


def unit_value(snapshot: Mapping[str, Any], unit: str) -> Any:
    """One unit of a pass snapshot (see services.workflow.pass_snapshot); None if absent."""
    if unit in (OVERVIEW, SEGMENTATION):
        return snapshot.get(unit)
    index = window_index(unit)
    return next((w for w in snapshot.get("windows", []) if w.get("index") == index), None)


def reopened(returned: Sequence[Mapping[str, Any]]) -> set[str]:
    return {item["unit"] for item in returned}


def unanswered(
    returned: Sequence[Mapping[str, Any]], snapshot: Mapping[str, Any], replies: Mapping[str, str]
) -> list[str]:
    """Units returned and left unchanged in `snapshot` without a reply, as messages."""
    problems = []
    for item in returned:
        unit = item["unit"]
        unchanged = unit_value(snapshot, unit) == item.get("before")
        if unchanged and not str(replies.get(unit, "") or "").strip():
            problems.append(
                f"{unit_label(unit)} was returned (“{item['comment']}”) and is unchanged: "
                "correct it, or reply to the reviewer saying why you keep it."
            )
    return problems
