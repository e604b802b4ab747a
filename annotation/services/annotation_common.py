"""What every step of an annotation's workflow shares: its errors, its snapshots, the undo window,
the audit trail, the conditional version bump and the input checks."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, F, FilteredRelation, OuterRef, Q, QuerySet, Subquery, Value
from django.utils import timezone

from annotation.errors import ServiceError
from annotation.models import (
    Annotation,
    AuditEvent,
    CorrectionPass,
    Membership,
    Study,
    Window,
    WindowCorrection,
    Withdrawal,
)
from annotation.permissions import known_roles
from annotation.prepared import prepared
from annotation.prepared_writes import insert, prepared_update
from annotation.rules import workflow
from annotation.selectors.counted import timed_out_participation
from annotation.services.study_state import Write, refusal_message, study_require
from annotation.services.taxonomy import taxonomy_modes

CLAIM_MINUTES = 30

# Called with an annotation id after the transaction that made its verdict final
# commits. Other apps register here (scoring enqueues its jobs) so that this
# module does not depend on them.
FINAL_VERDICT_HOOKS: list[Callable[[int], None]] = []


# Called with an annotation id after the transaction that took its final verdict back (an undone
# approval) commits: scoring discards what it computed for that verdict.
VERDICT_WITHDRAWN_HOOKS: list[Callable[[int], None]] = []


def _after_final_verdict(annotation_id: int) -> None:
    for hook in FINAL_VERDICT_HOOKS:
        transaction.on_commit(lambda hook=hook: hook(annotation_id))


def _after_verdict_withdrawn(annotation_id: int) -> None:
    for hook in VERDICT_WITHDRAWN_HOOKS:
        transaction.on_commit(lambda hook=hook: hook(annotation_id))
MAX_ACTIVE_SECONDS_PER_SAVE = 600  # a save never credits more than 10 minutes of work
# A return comment says what to fix; a page of text is plenty.
MAX_RETURN_COMMENT_CHARS = 5_000
# The workspace's view state (unit, time, focus) is a few dozen characters of JSON.
MAX_UI_STATE_CHARS = 10_000


class Conflict(ServiceError):
    """The annotation changed since the client loaded it; `current` is what it is now."""

    def __init__(self, message: str, current: Mapping[str, Any]):
        super().__init__(message)
        self.current = dict(current)


class NotAllowed(ServiceError):
    """The person may not do this to this annotation."""



def study_not_running_message(study: Study) -> str:
    return refusal_message(study, Write.WORK)


def timed_out_message(at) -> str:
    """The sentence a participant whose time allowed ran out at `at` gets, on the link's page
    and from the workflow (annotation.services.recruitment)."""
    return (f"Your time for this study ran out at {at:%Y-%m-%d %H:%M} UTC, so the items you had not submitted "
            "have gone to other participants. The work you submitted still counts. Thank you for your part; "
            "please return the study on your platform.")


def withdrawn_message(study: Study, at) -> str:
    """The sentence every page and API answers a withdrawn member who tries to work
    (annotation.services.withdrawal)."""
    return (f"You withdrew from study {study.name} on {at:%Y-%m-%d %H:%M} UTC: you no longer work in it, and "
            "your annotations no longer count in it. Thank you for your part.")


def _require_running(study: Study) -> None:
    """Annotating and reviewing happen only while the study runs: the study's state rule."""
    study_require(study, Write.WORK)


# --------------------------------------------------------------------------- reading


@prepared
def caption_windows(*, caption_id: int):
    """The caption's windows in timeline order."""
    return Window.objects.filter(caption_id=caption_id).order_by("index")


@prepared
def _window_rows_read(*, correction_pass_id: int):
    return (WindowCorrection.objects.filter(correction_pass_id=correction_pass_id)
            .select_related("window").order_by("window__index"))


def pass_window_rows(correction: CorrectionPass) -> list[WindowCorrection]:
    """The pass's window corrections, each with its window, in window order (one query)."""
    return _window_rows_read(correction_pass_id=correction.pk)


def pass_snapshot(
    correction: CorrectionPass | None, window_rows: Sequence[WindowCorrection] | None = None
) -> dict[str, Any]:
    """A pass as plain data: what the API returns and what the audit trail records.
    `window_rows` are its window corrections when the caller has them already (in window
    order, each with its window), else they are read."""
    if correction is None:
        return {}
    if window_rows is None:
        window_rows = pass_window_rows(correction)
    return {
        "overview": {
            "verdict": correction.overview_verdict,
            "text": correction.overview_text,
            "modes": list(correction.overview_modes),
        },
        "windows": [
            {
                "index": w.window.index,
                "verdict": w.verdict,
                "scene": w.scene,
                "shot": w.shot,
                "start": w.start,
                "end": w.end,
                "modes": list(w.modes),
            }
            for w in window_rows
        ],
        "segmentation": {
            "verdict": correction.segmentation_verdict,
            "modes": list(correction.segmentation_modes),
            "windows": list(correction.corrected_windows),
        },
    }


@prepared
def passes_read(*, annotation_id: int):
    return CorrectionPass.objects.filter(annotation_id=annotation_id)


def _passes_of(annotation: Annotation) -> list[CorrectionPass]:
    """The annotation's passes: those an autosave read and kept on it (`kept_passes`), those
    read with it by a read that only shows them (with_passes), or those prefetched with it
    (prefetch_related), else read."""
    kept = getattr(annotation, "kept_passes", None)
    if kept is None and getattr(annotation, "passes_joined", False):
        kept = passes_as_read(annotation)
    if kept is None:
        kept = getattr(annotation, "_prefetched_objects_cache", {}).get("passes")
    return list(kept) if kept is not None else passes_read(annotation_id=annotation.pk)


def annotation_snapshot(
    annotation: Annotation, annotator_pass: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The annotation's state and passes as plain data. `annotator_pass` is its annotator
    pass's snapshot when the caller has just made it (an autosave), which saves reading it."""
    passes = {p.kind: p for p in _passes_of(annotation)}
    if annotator_pass is None:
        annotator_pass = pass_snapshot(passes.get(CorrectionPass.Kind.ANNOTATOR))
    return {
        "id": annotation.pk,
        "state": annotation.state,
        "version": annotation.version,
        "overview_locked": annotation.overview_locked_at is not None,
        "return_comment": annotation.return_comment,
        "returned_units": [
            {key: item.get(key, "") for key in ("unit", "comment", "reply")}
            for item in annotation.returned_units
        ],
        "reviewer": annotation.reviewer.username if annotation.reviewer_id else None,
        "claim_expires_at": annotation.claim_expires_at.isoformat() if annotation.claim_expires_at else None,
        "undo": _undo_offer(annotation),
        "active_seconds": annotation.active_seconds,
        "telemetry": annotation.telemetry,
        "ui_state": annotation.ui_state,
        "annotator_pass": annotator_pass,
        "qc_pass": pass_snapshot(passes.get(CorrectionPass.Kind.QC)),
    }


def _undo_offer(annotation: Annotation) -> dict[str, Any] | None:
    """The action that may still be undone, and until when; None when none."""
    now = timezone.now()
    if not annotation.undo or annotation.undo_until is None or annotation.undo_until < now:
        return None
    return {"action": annotation.undo.get("action"), "until": annotation.undo_until.isoformat(),
            "seconds_left": round((annotation.undo_until - now).total_seconds(), 1)}


def undo_seconds_of(study: Study) -> int:
    """How long the study's decisions may be undone: its own undo_seconds, else UNDO_SECONDS."""
    return settings.UNDO_SECONDS if study.undo_seconds is None else study.undo_seconds


def _undo_window(
    action: str, actor, before: Mapping[str, Any] | None = None, *, study: Study
) -> dict[str, Any]:
    """The fields that let `actor` undo `action` for the study's undo seconds, restoring `before`."""
    return {
        "undo_until": timezone.now() + timedelta(seconds=undo_seconds_of(study)),
        "undo": {"action": action, "actor": actor.pk, "before": dict(before or {})},
    }


def _audit(annotation: Annotation, actor, action: str, before: Mapping, after: Mapping) -> None:
    insert(AuditEvent(
        study_id=annotation.caption.clip.study_id,
        annotation=annotation,
        actor=actor,
        action=action,
        before=dict(before),
        after=dict(after),
    ))


def _reread(annotation: Annotation) -> None:
    """Read the annotation's own columns again after an UPDATE (one prepared read), keeping its
    caption, clip, study and taxonomy as already read: those never change."""
    for name, value in _own_columns_read.one(annotation_id=annotation.pk).items():
        setattr(annotation, name, value)


# Every column of an annotation but the ones fixed at assignment.
REREAD_FIELDS = [
    f.attname for f in Annotation._meta.concrete_fields
    if f.attname not in ("id", "caption_id", "taxonomy_id", "annotator_id")
]


@prepared
def _own_columns_read(*, annotation_id: int):
    return Annotation.objects.filter(pk=annotation_id).values(*REREAD_FIELDS)



def _roles(study: Study, user) -> set[str]:
    """The person's roles in the study: as this request's permission check already read them,
    or read now (a service called outside a request caches nothing)."""
    known = known_roles(user, study)
    if known is not None:
        return known
    return set(Membership.objects.filter(study=study, user=user).values_list("role", flat=True))


CLAIM_RELATED = ("caption__clip__study", "taxonomy", "reviewer")
# The passes _claim_read_by_annotator reads with the annotation, by kind.
PASSES_AS_READ = ("read_annotator_pass", "read_qc_pass")


def passes_as_read(annotation: Annotation) -> list[CorrectionPass]:
    """The annotation's passes as read with it (_claim_version, with_passes), the annotator's first."""
    return [found for name in PASSES_AS_READ if (found := getattr(annotation, name, None)) is not None]


def _passes_joined(rows: QuerySet[Annotation]) -> QuerySet[Annotation]:
    """`rows` with each annotation's passes in the same statement, as PASSES_AS_READ."""
    return rows.select_related(*PASSES_AS_READ).annotate(
        read_annotator_pass=FilteredRelation("passes", condition=Q(passes__kind=CorrectionPass.Kind.ANNOTATOR)),
        read_qc_pass=FilteredRelation("passes", condition=Q(passes__kind=CorrectionPass.Kind.QC)),
    )


def with_passes(rows: QuerySet[Annotation]) -> QuerySet[Annotation]:
    """`rows` with each annotation's passes read in the same statement, for a read that only
    shows them: annotation_snapshot takes them from there (`passes_joined`) and reads none."""
    return _passes_joined(rows).annotate(passes_joined=Value(True))


@prepared
def _claim_read_by_annotator(*, annotation_id: int, annotator_id: int):
    """The annotation as _claim_version checks it, with its study, taxonomy and reviewer, and in
    the same statement what an annotator's change depends on: whether they are still an
    annotator of the study (a deactivated member's work stays theirs, but they no longer change
    it) or, for a gold verdict, its admin or gold expert; whether they withdrew; and whether
    their time allowed as a participant ran out. And its passes as they are before the change
    (`read_annotator_pass`, `read_qc_pass`, absent when it has none), which an autosave changes:
    every change of a pass of an annotation its annotator may edit bumps the annotation's
    version, so a pass that changed after this read makes the version's UPDATE refuse the save."""
    study = OuterRef("caption__clip__study_id")
    return _passes_joined(Annotation.objects.select_related(*CLAIM_RELATED)).annotate(
        still_annotator=Exists(Membership.objects.filter(
            study_id=study, user_id=annotator_id, role=Membership.Role.ANNOTATOR)),
        still_gold_maker=Exists(Membership.objects.filter(
            study_id=study, user_id=annotator_id, role__in=[Membership.Role.ADMIN, Membership.Role.EXPERT])),
        withdrawn_at=Subquery(Withdrawal.objects.filter(
            study_id=study, user_id=annotator_id).order_by().values("at")[:1]),
        timed_out_at=Subquery(timed_out_participation(study=study, user=annotator_id).values("time_out_at")[:1]),
    ).filter(pk=annotation_id)


def _claim_version(
    annotation_id: int,
    base_version: int,
    *,
    annotator,
    also: Callable[[Annotation], dict[str, Any]] | None = None,
) -> Annotation:
    """Bump the version of the annotator's annotation if it is still `base_version` and
    editable; else NotAllowed or Conflict.

    One read and one conditional UPDATE: the fields `also(annotation)` returns (computed from
    the row as read) are written by the same UPDATE, which is safe because it applies only
    while the version is still the one read. The returned annotation carries the new values.
    """
    annotation = _claim_read_by_annotator.one(annotation_id=annotation_id, annotator_id=annotator.pk)
    if annotation.annotator_id != annotator.pk:
        raise NotAllowed("Only the assigned annotator may edit this annotation.")
    if annotation.purpose == Annotation.Purpose.GOLD:
        # A gold verdict is made by a study admin or gold expert, who need not be an annotator.
        annotation.still_annotator = annotation.still_gold_maker
    if annotation.withdrawn_at is not None and annotation.purpose != Annotation.Purpose.GOLD:
        raise NotAllowed(withdrawn_message(annotation.caption.clip.study, annotation.withdrawn_at))
    if annotation.timed_out_at is not None and annotation.purpose != Annotation.Purpose.GOLD:
        # Their unsubmitted items go to the next participant: an open workspace saves no more.
        raise NotAllowed(timed_out_message(annotation.timed_out_at))
    if not annotation.still_annotator:
        raise NotAllowed("You are no longer an annotator of this study; your work is kept as it is.")
    _require_running(annotation.caption.clip.study)
    moved, updates = 0, {}
    if annotation.version == base_version and annotation.state in workflow.EDITABLE:
        updates = also(annotation) if also else {}
        arguments: dict[str, Any] = {}
        for name, value in updates.items():
            if isinstance(value, Added):
                arguments[f"add_{name}"] = value.amount  # see _version_bump
            else:
                arguments[name] = value
        moved = _version_bump(annotation_id=annotation_id, base_version=base_version,
                              annotator_id=annotator.pk, **arguments)
    if not moved:
        annotation.refresh_from_db()  # someone may have acted since the read
        if annotation.version != base_version:
            message = (
                f"This annotation changed since you loaded it (your version {base_version}, "
                f"now {annotation.version})."
            )
        else:
            message = f"This annotation is {annotation.get_state_display()} and cannot be changed now."
        raise Conflict(message, annotation_snapshot(annotation))
    annotation.version = base_version + 1
    for name, value in updates.items():
        if isinstance(value, Added):
            setattr(annotation, name, getattr(annotation, name) + value.amount)
        else:
            setattr(annotation, name, value)
    return annotation


@dataclass(frozen=True)
class Added:
    """A new value of `also` in _claim_version: the column plus `amount`, added by the UPDATE."""

    amount: float


@prepared_update
def _version_bump(*, annotation_id: int, base_version: int, annotator_id: int, **fields: Any):
    """_claim_version's UPDATE: the version bumped and `fields` written if the annotator's
    annotation is still at `base_version` and editable; a field named add_<column> is added to
    that column."""
    values: dict[str, Any] = {"version": F("version") + 1}
    for name, value in fields.items():
        column = name.removeprefix("add_")
        values[column] = F(column) + value if name.startswith("add_") else value
    rows = Annotation.objects.filter(pk=annotation_id, version=base_version, annotator_id=annotator_id,
                                     state__in=sorted(workflow.EDITABLE))
    return rows, values


def _annotator_pass(annotation: Annotation) -> CorrectionPass:
    correction, _ = CorrectionPass.objects.get_or_create(
        annotation=annotation, kind=CorrectionPass.Kind.ANNOTATOR, defaults={"author_id": annotation.annotator_id}
    )
    return correction


def _check_modes(annotation: Annotation, modes: Sequence[str], *, unit: str) -> list[str]:
    levels = {mode["key"]: mode["level"] for mode in taxonomy_modes(annotation.taxonomy)}
    unknown = [m for m in modes if m not in levels]
    if unknown:
        raise ServiceError(f"Unknown failure mode(s) {unknown} in taxonomy {annotation.taxonomy}.")
    if unit != "segmentation":
        caption_only = [m for m in modes if levels[m] == "caption"]
        if caption_only:
            raise ServiceError(f"{', '.join(caption_only)} is judged once per caption, not on the {unit}.")
    return sorted(set(modes), key=list(levels).index)


def _text(value: Any, field: str, limit: int) -> str:
    """`value` as stored text, or ServiceError naming `field`: the limits are the import's."""
    if not isinstance(value, str):
        raise ServiceError(f"{field} must be text, not {type(value).__name__}.")
    if len(value) > limit:
        raise ServiceError(f"{field} is {len(value):,} characters long; the limit is {limit:,}.")
    if "\x00" in value:
        raise ServiceError(f"{field} contains a NUL character (\\u0000), which cannot be stored.")
    return value


def _seconds(value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ServiceError(f"{field} must be a number of seconds, not {value!r:.40}.")
    try:
        seconds = float(value)
    except OverflowError:
        seconds = math.inf
    if not math.isfinite(seconds):
        raise ServiceError(f"{field} must be a finite number of seconds.")
    return seconds


def _mapping(value: Any, field: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ServiceError(f"{field} must be an object, not {type(value).__name__}.")
    return value


def _modes(value: Any, field: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(m, str) for m in value):
        raise ServiceError(f"{field} must be a list of failure-mode keys.")
    return value
