"""The work log of a study: who assigned, opened, submitted, claimed, approved, amended, returned,
released or undid what and when, newest first, read from the audit trail (AuditEvent).

Read-side only. Every workflow action is audited by its service (annotation.services:
assigning, annotating, review, members), so the log is the trail's workflow events; autosaves
(``save``) are left out (one per keystroke pause: the annotation's own audit trail has them).
Study settings, members and invitations are the history page's (annotation.api.studies.history_of).

Who reads it (annotation.permissions.ReadsPeopleWork): the study's admins see people by name,
its researchers by pseudonym (the release's, annotation.rules.pseudonyms); a model is named only to
whom `sees_model_identity` allows (an admin who also annotates sees aliases).
Pages are keyset pages on the event id: `before` is the previous page's `next`. Each entry says
what its annotation is for (`purpose`: work, gold, practice, gold_check): the log's readers may
know which items are gold; annotators and reviewers never read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Q

from annotation.errors import FieldErrors
from annotation.models import AuditEvent, Membership, Study
from annotation.rules.pseudonyms import pseudonym

WORK_ACTIONS = (
    "assign", "open", "lock_overview", "submit", "claim", "release", "approve", "amend", "return", "undo",
)
ACTION_LABELS = {
    "assign": "assigned", "open": "opened", "lock_overview": "locked the overview", "submit": "submitted",
    "claim": "claimed for review", "release": "released the claim", "approve": "approved as is",
    "amend": "amended and approved", "return": "returned", "undo": "undid",
}


@dataclass(frozen=True)
class People:
    """How the reader sees the study's people: {user id: shown name} and back."""

    shown: dict[int, str]

    def of(self, user_id: int | None) -> str:
        if user_id is None:
            return ""
        return self.shown.get(user_id, "")

    def ids_of(self, name: str) -> list[int]:
        return [pk for pk, shown in self.shown.items() if shown == name]


def people_of(study: Study, *, by_name: bool) -> People:
    """Everyone who is or was a member of the study, or acted in it, as the reader sees them:
    by name (`by_name`) or by pseudonym."""
    ids = set(Membership.objects.filter(study=study).values_list("user_id", flat=True))
    ids |= set(AuditEvent.objects.filter(study=study, actor__isnull=False).order_by()
               .values_list("actor_id", flat=True).distinct())
    users = get_user_model().objects.filter(pk__in=ids)
    if by_name:
        return People({user.pk: user.get_username() for user in users})
    return People({user.pk: pseudonym(study.release_secret, user.pk) for user in users})


def _cursor(value: str | None) -> int | None:
    if value in (None, ""):
        return None
    try:
        cursor = int(str(value))
    except ValueError:
        raise FieldErrors({"before": f"must be the `next` of the previous page, not {str(value)[:20]!r}."}) from None
    if cursor < 1:
        raise FieldErrors({"before": f"must be the `next` of the previous page, not {cursor}."})
    return cursor


def work_log(
    *, study: Study, people: People, names: bool, person: str = "", clip: str = "", action: str = "",
    before: str | None = None, limit: int = 50,
) -> dict[str, Any]:
    """A page of the work log, newest first: `limit` entries older than `before`, filtered by who
    acted (`person`, as the reader sees people), the clip (its name) and the action.
    `names`: whether models are named (else their aliases)."""
    if action and action not in WORK_ACTIONS:
        raise FieldErrors({"action": f"must be one of {', '.join(WORK_ACTIONS)}, not {action[:40]!r}."})
    events = AuditEvent.objects.filter(study=study).filter(
        Q(annotation__isnull=False, action__in=WORK_ACTIONS) | Q(annotation__isnull=True, action="assign")
    )
    if person:
        events = events.filter(actor_id__in=people.ids_of(person))
    if clip:
        events = events.filter(annotation__caption__clip__name=clip)
    if action:
        events = events.filter(action=action)
    cursor = _cursor(before)
    if cursor is not None:
        events = events.filter(pk__lt=cursor)
    rows = list(
        events.order_by("-pk").values(
            "pk", "at", "action", "actor_id", "annotation_id", "before", "after",
            "annotation__annotator_id", "annotation__purpose", "annotation__caption__clip__name",
            "annotation__caption__model__name", "annotation__caption__model__alias",
        )[: limit + 1]
    )
    more = len(rows) > limit
    rows = rows[:limit]
    return {
        "entries": [_entry(row, people, names=names) for row in rows],
        "next": str(rows[-1]["pk"]) if more else None,
    }


def _entry(row: Mapping[str, Any], people: People, *, names: bool) -> dict[str, Any]:
    model = row["annotation__caption__model__name"] if names else row["annotation__caption__model__alias"]
    return {
        "id": row["pk"],
        "at": row["at"],
        "person": people.of(row["actor_id"]) or "(the system)",
        "action": row["action"],
        "summary": summary(row, people),
        "annotation": row["annotation_id"],
        "annotator": people.of(row["annotation__annotator_id"]),
        "purpose": row["annotation__purpose"] or "",
        "clip": row["annotation__caption__clip__name"] or "",
        "model": model or "",
    }


def summary(row: Mapping[str, Any], people: People) -> str:
    """One sentence for a work-log entry (without the caption's text or a reviewer's comment)."""
    action, before, after = row["action"], row["before"] or {}, row["after"] or {}
    if action == "assign":
        count = len(after.get("annotators") or [])
        return (f"Assigned {after.get('created', 0)} caption(s) to {count} annotator(s) "
                f"({after.get('design', '')}).")
    if action == "undo":
        undone = after.get("undone") or before.get("action") or ""
        return f"Undid the {ACTION_LABELS.get(undone, undone)} ({undone})."
    if action == "return":
        units = len(after.get("units") or [])
        return f"Returned to the annotator ({units} unit(s) to look at again)."
    if action == "amend":
        size = (after.get("edit_size") or {}).get("overview") or {}
        words = size.get("words_changed")
        return "Amended and approved" + (f" ({words} word(s) of the overview changed)." if words is not None else ".")
    if action == "release" and after.get("why"):
        return f"Released the claim ({after['why']})."
    return ACTION_LABELS.get(action, action).capitalize() + "."
