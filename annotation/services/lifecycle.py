"""A study's lifecycle: setup -> running -> closed -> archived.

- **setup**: everything is editable and nobody annotates or reviews yet (annotators and
  reviewers see nothing of the study's work). Starting checks :func:`readiness` and refuses,
  listing what is missing.
- **running**: the taxonomy, the thresholds and the assignment design are frozen
  (:data:`FROZEN_FIELDS`; the services refuse, and migration 0016's trigger refuses in the
  database); clips and captions can still be added and assigned.
- **closed**: nothing changes but reading, exporting, the release and archiving; the final
  profile is built (a hook the scoring app registers) and kept. Jobs still queued or running
  are ended as failed when it closes (STUDY_CLOSING_HOOKS): what they would store is refused.
- **archived**: hidden from the study lists, still readable and exportable.

What each state allows is one rule, annotation.services.study_state, that every write asks.

Each move is a conditional UPDATE of the study's state, audited as an AuditEvent of the study
(``study_start``, ``study_close``, ``study_archive``). Only the study's admins move a study.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from django.db import transaction
from django.db.models import Count, Exists, OuterRef

from annotation.errors import ServiceError
from annotation.models import (
    Annotation,
    AssignmentDesign,
    AuditEvent,
    Caption,
    Clip,
    Membership,
    Study,
    StudyState,
)
from annotation.rules import workflow
from annotation.services.annotation_common import NotAllowed, _roles
from annotation.services.study_state import Write, study_require

# The settings that shape every verdict and its scores: editable in setup only. Migration 0016
# names the same columns in its trigger (tests/annotation/test_lifecycle.py checks they agree).
FROZEN_FIELDS = {
    "taxonomy": "taxonomy",
    "word_thresholds": "word thresholds",
    "near_total_cut": "near-total cut",
    "length_band": "length band",
    "assignment_design": "assignment design",
    "spread_gap": "spread gap",
    "assignment_seed": "assignment seed",
    "caption_language": "caption language",
}

# The moves, by the service that makes them: (from, to, audit action).
MOVES = {
    "start": (StudyState.SETUP, StudyState.RUNNING, "study_start"),
    "close": (StudyState.RUNNING, StudyState.CLOSED, "study_close"),
    "archive": (StudyState.CLOSED, StudyState.ARCHIVED, "study_archive"),
}
MOVED = {"start": "started", "close": "closed", "archive": "archived"}

# Called with (study id, actor's username) once the transaction that closed a study commits:
# the scoring app registers the final profile's export here, so this module need not import it.
STUDY_CLOSED_HOOKS: list[Callable[[int, str], None]] = []
# Called with the study inside the transaction that closes it, before the move: each ends the
# jobs of its app still queued or running (their rows and results could not be stored after).
STUDY_CLOSING_HOOKS: list[Callable[[Study], None]] = []
# Extra counts of what is unfinished ({name: count}), e.g. the scoring app's final verdicts not
# yet scored.
UNFINISHED_COUNTERS: list[Callable[[Study], dict[str, int]]] = []

# What `unfinished` counts, in the words the pages and the close confirmation use.
UNFINISHED_LABELS = {
    "unassigned": "captions with no annotator",
    "assigned": "not started",
    "in_progress": "in progress",
    "returned": "returned, waiting for the annotator",
    "submitted": "submitted, waiting for QC",
    "in_review": "claimed by a QC reviewer",
    "unscored": "final verdicts not yet scored",
}



class NotReady(ServiceError):
    """The study cannot start yet; `missing` are the readiness items not done."""

    def __init__(self, missing: list[ReadinessItem]):
        self.missing = missing
        super().__init__("The study cannot start yet: " + "; ".join(item.detail for item in missing) + ".")


class NeedsConfirmation(ServiceError):
    """Closing stops all edits: the caller confirms, having seen what is unfinished."""

    def __init__(self, unfinished: dict[str, int]):
        self.unfinished = unfinished
        left = describe_unfinished(unfinished)
        super().__init__(
            "Closing stops all annotation and review for good"
            + (f"; unfinished: {left}" if left else "; nothing is unfinished")
            + ". Confirm to close."
        )


class StartNeedsConfirmation(ServiceError):
    """Some captions have no annotator: the caller confirms starting without them."""

    def __init__(self, item: ReadinessItem):
        self.item = item
        super().__init__(f"{item.detail}. Confirm to start anyway: they stay unannotated until they are assigned.")


@dataclass(frozen=True)
class ReadinessItem:
    """One thing a study needs before it starts. `key` names the place that fixes it. An item
    that does not block (`blocking` false) asks the admin to confirm the start instead."""

    key: str
    label: str
    done: bool
    detail: str
    blocking: bool = True

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


ROLE_ITEMS = [
    (Membership.Role.ADMIN, "a study admin"),
    (Membership.Role.ANNOTATOR, "an annotator"),
    (Membership.Role.REVIEWER, "a QC reviewer"),
    (Membership.Role.RESEARCHER, "a researcher"),
]


def readiness(study: Study) -> list[ReadinessItem]:
    """What the study needs before it starts, each item done or not, with a sentence saying
    where it stands. Four queries whatever the study's size: clips, captions, members by role,
    assigned captions (a fifth, captions per clip, says why when some have no annotator)."""
    clips = Clip.objects.filter(study=study).count()
    captions = Caption.objects.filter(clip__study=study).count()
    roles = dict(
        Membership.objects.filter(study=study).order_by().values("role").annotate(n=Count("pk"))
        .values_list("role", "n")
    )
    assigned = (
        Annotation.objects.filter(caption__clip__study=study).order_by().values("caption_id").distinct().count()
    )
    items = [
        ReadinessItem("clips", "Clips", clips > 0,
                      f"{clips} clip{'s' if clips != 1 else ''}" if clips else "no clips imported"),
        ReadinessItem("captions", "Captions", captions > 0,
                      f"{captions} caption{'s' if captions != 1 else ''}" if captions else "no captions imported"),
    ]
    for role, label in ROLE_ITEMS:
        n = roles.get(role, 0)
        items.append(ReadinessItem(
            f"members_{role}", f"Members: {Membership.Role(role).label}s", n > 0,
            f"{n} {Membership.Role(role).label}{'s' if n != 1 else ''}" if n else f"no member is {label}",
        ))
    items.append(ReadinessItem(
        "assignment", "Assignment", assigned > 0,
        f"{assigned} of {captions} captions assigned" if assigned else "no caption is assigned to an annotator",
    ))
    if assigned:
        items.append(_unassigned_item(study, captions - assigned, captions, roles.get(Membership.Role.ANNOTATOR, 0)))
    return items


def _unassigned_item(study: Study, unassigned: int, captions: int, annotators: int) -> ReadinessItem:
    """How many captions have no annotator, and why; one more query only when some have none."""
    label = "Every caption assigned"
    if not unassigned:
        return ReadinessItem("unassigned", label, True, "every caption has an annotator", blocking=False)
    detail = f"{unassigned} of {captions} captions have no annotator"
    per_clip = (Caption.objects.filter(clip__study=study).order_by().values("clip_id").annotate(n=Count("pk"))
                .order_by("-n").values_list("n", flat=True).first() or 0)
    if study.assignment_design == AssignmentDesign.ONE_MODEL_PER_CLIP and per_clip > annotators:
        detail += (f": too few annotators for the one-model-per-clip design, which gives an annotator at most one "
                   f"caption of a clip; a clip has up to {per_clip} captions, the study has {annotators} "
                   f"annotator{'s' if annotators != 1 else ''}. Add annotators and assign again")
    else:
        detail += ": they were imported after the last assignment, or left out of it; assign them"
    return ReadinessItem("unassigned", label, False, detail, blocking=False)


def unfinished(study: Study) -> dict[str, int]:
    """What is not finished, by UNFINISHED_LABELS key: annotations by state (one grouped
    query) and the registered counters (the scoring app's `unscored`)."""
    by_state = dict(
        Annotation.objects.filter(caption__clip__study=study)
        .exclude(state=workflow.APPROVED)
        .order_by().values("state").annotate(n=Count("pk")).values_list("state", "n")
    )
    counts = {key: by_state.get(key, 0) for key in UNFINISHED_LABELS if key not in ("unscored", "unassigned")}
    counts = {"unassigned": unassigned_captions(study), **counts}
    for counter in UNFINISHED_COUNTERS:
        counts.update(counter(study))
    return counts


def unassigned_captions(study: Study) -> int:
    """The study's captions that no annotator has (none of their annotations exists)."""
    return (Caption.objects.filter(clip__study=study)
            .exclude(Exists(Annotation.objects.filter(caption_id=OuterRef("pk")))).count())


def describe_unfinished(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {UNFINISHED_LABELS.get(key, key)}" for key, n in counts.items() if n)


def study_require_setup(study: Study, fields: Iterable[str]) -> None:
    """Refuse (StudyStateRefused) a change of any frozen field of a study that has left setup."""
    frozen = [FROZEN_FIELDS[name] for name in fields if name in FROZEN_FIELDS]
    if frozen:
        study_require(study, Write.FROZEN_SETTINGS, frozen=frozen)


def _require_admin(study: Study, actor) -> None:
    if Membership.Role.ADMIN not in _roles(study, actor):
        raise NotAllowed("Only the study's admins start, close or archive it.")


def _move(study: Study, move: str, actor, after: dict[str, Any] | None = None) -> Study:
    source, target, action = MOVES[move]
    _require_admin(study, actor)
    moved = Study.objects.filter(pk=study.pk, state=source).update(state=target)
    study.refresh_from_db(fields=["state"])
    if not moved:
        raise ServiceError(
            f"Study {study.name} is {study.get_state_display()}: only a study "
            f"{StudyState(source).label} can be {MOVED[move]}."
        )
    AuditEvent.objects.create(
        study=study, actor=actor, action=action, before={"state": source},
        after={"state": target, **(after or {})},
    )
    return study


@transaction.atomic
def study_start(*, study: Study, actor, confirm: bool = False) -> Study:
    """Open the study for work; refused (NotReady) while a readiness item is missing, and
    (StartNeedsConfirmation) while captions have no annotator unless `confirm`."""
    _require_admin(study, actor)
    if study.state == StudyState.SETUP:
        items = readiness(study)
        missing = [item for item in items if not item.done and item.blocking]
        if missing:
            raise NotReady(missing)
        unassigned = next((item for item in items if not item.done), None)
        if unassigned is not None and not confirm:
            raise StartNeedsConfirmation(unassigned)
    return _move(study, "start", actor)


@transaction.atomic
def study_close(*, study: Study, actor, confirm: bool = False) -> Study:
    """Close the study: all annotation and review stops, and the final profile is built.
    Without `confirm`, refused with NeedsConfirmation carrying what is unfinished."""
    _require_admin(study, actor)
    left = unfinished(study)
    if study.state == StudyState.RUNNING and not confirm:
        raise NeedsConfirmation(left)
    if study.state == StudyState.RUNNING:
        for hook in STUDY_CLOSING_HOOKS:
            hook(study)
    study = _move(study, "close", actor, {"unfinished": left})
    study_id, name = study.pk, actor.get_username()
    for hook in STUDY_CLOSED_HOOKS:
        transaction.on_commit(lambda hook=hook: hook(study_id, name))
    return study


@transaction.atomic
def study_archive(*, study: Study, actor) -> Study:
    """Hide a closed study from the study lists; it stays readable and exportable."""
    return _move(study, "archive", actor)


def lifecycle_status(study: Study) -> dict[str, Any]:
    """Where the study stands and what it may do next, for the API and the study page."""
    moves = [move for move, (source, _, _) in MOVES.items() if source == study.state]
    status: dict[str, Any] = {"state": study.state, "label": study.get_state_display(), "next": moves}
    if study.state == StudyState.SETUP:
        status["readiness"] = [item.as_dict() for item in readiness(study)]
    if study.state in (StudyState.RUNNING, StudyState.CLOSED):
        status["unfinished"] = unfinished(study)
    return status
