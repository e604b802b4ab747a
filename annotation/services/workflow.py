"""Annotations from assignment to final verdict: assigning, saving drafts, submitting, QC.

Every action is a transaction that first moves the annotation with a conditional
UPDATE (on its state and, for saves, on the version the client based its change
on). When that touches no row, someone else acted first: the action is refused
with Conflict (409 in the API), carrying the current state so the person can choose.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Case, Count, F, Q, Value, When
from django.db.models.expressions import CombinedExpression
from django.utils import timezone

from annotation import assignment, audit_diff, returns, risk, workflow
from annotation.formats import MAX_OVERVIEW_CHARS, MAX_WINDOW_TEXT_CHARS
from annotation.models import (
    Annotation,
    AuditEvent,
    Caption,
    CorrectionPass,
    Membership,
    Study,
    WindowCorrection,
)
from annotation.permissions import known_roles
from annotation.queues import REVIEW_ORDERS, review_candidates
from annotation.services import bulk
from annotation.services.errors import ServiceError
from annotation.services.taxonomy import taxonomy_freeze, taxonomy_modes
from scoring.metrics import edits

CLAIM_MINUTES = 30

# Called with an annotation id after the transaction that made its verdict final
# commits. Other apps register here (scoring enqueues its jobs) so that this
# module does not depend on them.
FINAL_VERDICT_HOOKS: list[Callable[[int], None]] = []


def _after_final_verdict(annotation_id: int) -> None:
    for hook in FINAL_VERDICT_HOOKS:
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


# --------------------------------------------------------------------------- reading


def pass_window_rows(correction: CorrectionPass) -> list[WindowCorrection]:
    """The pass's window corrections, each with its window, in window order (one query)."""
    return list(correction.windows.select_related("window").order_by("window__index"))


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


def annotation_snapshot(
    annotation: Annotation, annotator_pass: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The annotation's state and passes as plain data. `annotator_pass` is its annotator
    pass's snapshot when the caller has just made it (an autosave), which saves reading it."""
    passes = {p.kind: p for p in annotation.passes.all()}
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


def _undo_window(action: str, actor, before: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The fields that let `actor` undo `action` for settings.UNDO_SECONDS, restoring `before`."""
    return {
        "undo_until": timezone.now() + timedelta(seconds=settings.UNDO_SECONDS),
        "undo": {"action": action, "actor": actor.pk, "before": dict(before or {})},
    }


def _audit(annotation: Annotation, actor, action: str, before: Mapping, after: Mapping) -> None:
    AuditEvent.objects.create(
        study_id=annotation.caption.clip.study_id,
        annotation=annotation,
        actor=actor,
        action=action,
        before=dict(before),
        after=dict(after),
    )


def _reread(annotation: Annotation) -> None:
    """Read the annotation's own columns again after an UPDATE (one query), keeping its
    caption, clip, study and taxonomy as already read: those never change."""
    annotation.refresh_from_db(fields=REREAD_FIELDS)


# Every column of an annotation but the ones fixed at assignment.
REREAD_FIELDS = [
    f.attname for f in Annotation._meta.concrete_fields
    if f.attname not in ("id", "caption_id", "taxonomy_id", "annotator_id")
]


# --------------------------------------------------------------------------- assignment


ASSIGN_BATCH = 2000


@dataclass
class AssignmentReport:
    created: int
    skipped: int
    design: str = assignment.ONE_MODEL_PER_CLIP
    # Why captions were left unassigned, with how many: {reason: count}.
    reasons: dict[str, int] = dataclass_field(default_factory=dict)


def _annotations_create(placed: Sequence[assignment.Placed], *, taxonomy_id: int) -> None:
    """Store the plan's annotations. Queues are read in (assigned_at, id) order: rows are
    written in queue-position order, each taking its assigned_at as it is written, so every
    annotator's queue follows the plan. On PostgreSQL one COPY; elsewhere one INSERT per
    ASSIGN_BATCH annotations."""
    if bulk.copy_supported():
        bulk.rows_copy(
            model=Annotation,
            fields=("caption_id", "annotator_id", "taxonomy_id", "queue_position", "exposure", "assigned_at"),
            rows=((p.caption, p.annotator, taxonomy_id, p.position, p.exposure, timezone.now()) for p in placed),
        )
        return
    Annotation.objects.bulk_create([
        Annotation(caption_id=p.caption, annotator_id=p.annotator, taxonomy_id=taxonomy_id,
                   queue_position=p.position, exposure=p.exposure)
        for p in placed
    ], batch_size=ASSIGN_BATCH)


def _roles(study: Study, user) -> set[str]:
    """The person's roles in the study: as this request's permission check already read them,
    or read now (a service called outside a request caches nothing)."""
    known = known_roles(user, study)
    if known is not None:
        return known
    return set(Membership.objects.filter(study=study, user=user).values_list("role", flat=True))


@transaction.atomic
def annotations_assign(
    *,
    study: Study,
    annotators: Sequence,
    captions: Iterable[Caption] | None = None,
    overlap_share: float = 0.0,
    seed: int | None = None,
    design: str | None = None,
    gap: int | None = None,
    actor=None,
) -> AssignmentReport:
    """Give the captions to `annotators` under the study's assignment design.

    `design` and `gap` (the spread design's spacing), when given, become the study's; the
    order is drawn from `seed`, by default the study's own, so assigning again with the
    same inputs gives the same queues. A share `overlap_share` of the captions also goes
    to a second annotator, for agreement, under the same rules. Nobody gets a caption
    twice; what the design cannot place is counted in `skipped`, with the reasons.
    Each annotation stores its queue position and exposure (see annotation.assignment).
    """
    if not annotators:
        raise ServiceError("Choose at least one annotator.")
    if not 0 <= overlap_share <= 1:
        raise ServiceError(f"The overlap share must be between 0 and 1, not {overlap_share}.")
    annotator_ids = set(
        Membership.objects.filter(
            study=study, role=Membership.Role.ANNOTATOR, user__in=[p.pk for p in annotators]
        ).values_list("user_id", flat=True)
    )
    for person in annotators:
        if person.pk not in annotator_ids:
            raise ServiceError(f"{person} is not an annotator in study {study.slug!r}.")
    if overlap_share and len(annotators) < 2:
        raise ServiceError("Overlap needs at least two annotators.")
    changed = {}
    if design is not None and design != study.assignment_design:
        changed["assignment_design"] = design
    if gap is not None and gap != study.spread_gap:
        changed["spread_gap"] = gap
    design = study.assignment_design if design is None else design
    gap = study.spread_gap if gap is None else gap
    seed = study.assignment_seed if seed is None else seed
    # The study's captions in one query, by clip name and model alias (the plan depends on
    # this order, not on ids); the chosen ones are picked here, not sent as parameters.
    wanted = None if captions is None else {c.pk for c in captions}
    items = [
        assignment.Item(pk, clip_id, model_id)
        for pk, clip_id, model_id in Caption.objects.filter(clip__study=study)
        .order_by("clip__name", "model__alias")
        .values_list("pk", "clip_id", "model_id")
        if wanted is None or pk in wanted
    ]
    taken = dict(
        Annotation.objects.filter(caption__clip__study=study)
        .order_by()
        .values("caption_id")
        .annotate(n=Count("pk"))
        .values_list("caption_id", "n")
    )
    held: dict[int, list[assignment.Item]] = {person.pk: [] for person in annotators}
    for annotator_id, caption_id, clip_id, model_id in (
        Annotation.objects.filter(caption__clip__study=study, annotator__in=[a.pk for a in annotators])
        .order_by("assigned_at", "pk")  # the queue's order (annotation.queues)
        .values_list("annotator_id", "caption_id", "caption__clip_id", "caption__model_id")
    ):
        held[annotator_id].append(assignment.Item(caption_id, clip_id, model_id))
    try:
        plan = assignment.plan_assignment(
            items=items,
            annotators=[person.pk for person in annotators],
            design=design, seed=seed, overlap_share=overlap_share, gap=gap, held=held,
            taken=taken,
        )
    except assignment.DesignError as exc:
        raise ServiceError(str(exc)) from None
    if changed:
        Study.objects.filter(pk=study.pk).update(**changed)
        for name, value in changed.items():
            setattr(study, name, value)
    taxonomy = taxonomy_freeze(taxonomy=study.taxonomy)
    _annotations_create(sorted(plan.placed, key=lambda p: p.position), taxonomy_id=taxonomy.pk)
    reasons = dict(Counter(reason for _, reason in plan.unplaced))
    report = AssignmentReport(created=len(plan.placed), skipped=len(plan.unplaced), design=design,
                              reasons=reasons)
    if report.created or changed:
        AuditEvent.objects.create(
            study=study, actor=actor, action="assign",
            after={"created": report.created, "skipped": report.skipped, "overlap_share": overlap_share,
                   "design": design, "gap": gap, "seed": seed,
                   "annotators": [a.username for a in annotators]},
        )
    return report


# --------------------------------------------------------------------------- annotator


def _claim_version(
    annotation_id: int,
    base_version: int,
    states: Iterable[str],
    *,
    annotator=None,
    also: Callable[[Annotation], dict[str, Any]] | None = None,
) -> Annotation:
    """Bump the version if it is still `base_version` in one of `states` (and, with
    `annotator`, belongs to them); else NotAllowed or Conflict.

    One read and one conditional UPDATE: the fields `also(annotation)` returns (computed from
    the row as read) are written by the same UPDATE, which is safe because it applies only
    while the version is still the one read. The returned annotation carries the new values.
    """
    annotation = Annotation.objects.select_related("caption__clip", "taxonomy", "reviewer").get(pk=annotation_id)
    if annotator is not None and annotation.annotator_id != annotator.pk:
        raise NotAllowed("Only the assigned annotator may edit this annotation.")
    states = list(states)
    moved, updates = 0, {}
    if annotation.version == base_version and annotation.state in states:
        updates = also(annotation) if also else {}
        rows = Annotation.objects.filter(pk=annotation_id, version=base_version, state__in=states)
        if annotator is not None:
            rows = rows.filter(annotator=annotator)
        moved = rows.update(version=F("version") + 1, **updates)
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


class Added(CombinedExpression):
    """`field + amount` in an UPDATE, remembering the amount for the in-memory copy."""

    def __init__(self, name: str, amount: float):
        super().__init__(F(name), "+", Value(amount))
        self.amount = amount


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


@transaction.atomic
def annotation_open(*, annotation: Annotation, actor) -> Annotation:
    """The annotator starts (or restarts after a return) work on their annotation."""
    if annotation.annotator_id != actor.pk:
        raise NotAllowed("Only the assigned annotator may work on this annotation.")
    if annotation.state not in workflow.TRANSITIONS["open"].sources:
        return annotation
    _open(annotation.pk, actor, study_id=annotation.caption.clip.study_id)
    _reread(annotation)
    return annotation


def _open(annotation_id: int, actor, *, study_id: int) -> bool:
    """Move an assigned or returned annotation to in progress with one conditional update,
    with its annotator pass and the audit event; False when it was no longer openable.

    Three statements: the UPDATE, the pass's INSERT (a returned annotation keeps the pass it
    has) and the audit event's INSERT."""
    moved = Annotation.objects.filter(
        pk=annotation_id, state__in=list(workflow.TRANSITIONS["open"].sources)
    ).update(state=workflow.IN_PROGRESS, version=F("version") + 1, started_at=timezone.now())
    if not moved:
        return False
    CorrectionPass.objects.bulk_create(
        [CorrectionPass(annotation_id=annotation_id, kind=CorrectionPass.Kind.ANNOTATOR, author_id=actor.pk)],
        ignore_conflicts=True,
    )
    AuditEvent.objects.create(
        study_id=study_id, annotation_id=annotation_id, actor=actor, action="open",
        before={}, after={"state": workflow.IN_PROGRESS},
    )
    return True


@transaction.atomic
def annotation_start_next(*, study: Study, annotator) -> int | None:
    """Open the annotator's next item and give its id: returned ones first, then work in
    progress, then new ones, each in assignment order; None when nothing is left.

    The item is claimed with one conditional update of a row picked with
    SELECT ... FOR UPDATE SKIP LOCKED (PostgreSQL), so presses at the same moment never open
    the same item and never wait for each other; SQLite has one writer at a time, and the
    conditional update (state still openable) refuses a row another press opened first.
    Each read is a short index range (Annotation.Meta.indexes "annotation_my_queue"): the
    person's few returned and in-progress items, then the first of their new ones.
    """
    mine = Annotation.objects.filter(caption__clip__study=study, annotator=annotator)
    for _attempt in range(3):
        # Returned and in-progress items are few: one read finds whether there is either.
        started = (
            mine.filter(state__in=[workflow.RETURNED, workflow.IN_PROGRESS])
            .order_by(Case(When(state=workflow.RETURNED, then=0), default=1), "assigned_at", "id")
            .values_list("pk", "state")
            .first()
        )
        if started is not None and started[1] == workflow.IN_PROGRESS:
            return started[0]
        state = workflow.RETURNED if started is not None else workflow.ASSIGNED
        chosen = (
            mine.filter(state=state)
            .order_by("assigned_at", "id")
            .select_for_update(skip_locked=True, of=("self",))
            .values_list("pk", flat=True)
            .first()
        )
        if chosen is None:
            if state == workflow.ASSIGNED:
                return None
            continue  # the returned item was just taken by another press; look again
        if _open(chosen, annotator, study_id=study.pk):
            return chosen
    raise Conflict("Other presses took your next items at the same moment; press again.", {})


def _apply_overview(annotation: Annotation, correction: CorrectionPass, change: Any) -> None:
    change = _mapping(change, "overview")
    if annotation.overview_locked_at is not None:
        raise ServiceError("The overview verdict is locked; it was submitted before the window pass.")
    if "verdict" in change:
        if change["verdict"] not in CorrectionPass.Verdict.values:
            raise ServiceError(f"Unknown verdict {change['verdict']!r}: use accept or reject.")
        correction.overview_verdict = change["verdict"]
    if "text" in change:
        correction.overview_text = _text(change["text"], "overview.text", MAX_OVERVIEW_CHARS)
    if "modes" in change:
        modes = _modes(change["modes"], "overview.modes")
        correction.overview_modes = _check_modes(annotation, modes, unit="overview")
    if correction.overview_verdict == CorrectionPass.Verdict.ACCEPT:
        # An accept carries no modes and no corrected text.
        correction.overview_modes = []
        correction.overview_text = ""


def _apply_windows(
    annotation: Annotation, correction: CorrectionPass, changes: Any, rows: list[WindowCorrection]
) -> list[WindowCorrection]:
    """Apply window changes to the pass's window corrections `rows` (as read, in window order)
    and give the rows after them. Bounded writes whatever the number of windows changed: one
    read of the caption's windows, one INSERT of the new rows, one UPDATE of the changed ones."""
    if annotation.overview_locked_at is None:
        raise ServiceError("Submit the overview verdict first: the window pass opens after it.")
    if not isinstance(changes, list):
        raise ServiceError("windows must be a list of window changes.")
    windows = {w.index: w for w in annotation.caption.windows.all()}
    existing = {row.window_id: row for row in rows}
    created: dict[int, WindowCorrection] = {}
    changed: dict[int, WindowCorrection] = {}
    for number, change in enumerate(changes):
        change = _mapping(change, f"windows[{number}]")
        index = change.get("index")
        if isinstance(index, bool) or not isinstance(index, int):
            raise ServiceError(
                f"windows[{number}].index must be a window number, not {index!r:.40}."
            )
        if index not in windows:
            raise ServiceError(f"This caption has no window {index!r}.")
        window = windows[index]
        row = existing.get(window.pk) or created.get(window.pk)
        if row is None:
            row = created[window.pk] = WindowCorrection(
                correction_pass=correction, window=window,
                scene=window.scene, shot=window.shot, start=window.start, end=window.end,
            )
        elif row.pk is not None:
            changed[window.pk] = row
        verdict = change.get("verdict", row.verdict)
        if verdict not in CorrectionPass.Verdict.values:
            raise ServiceError(f"Unknown verdict {verdict!r} for window {index}.")
        row.verdict = verdict
        for field in ("scene", "shot"):
            if field in change:
                text = _text(change[field], f"windows[{number}].{field}", MAX_WINDOW_TEXT_CHARS)
                setattr(row, field, text)
        for field in ("start", "end"):
            if field in change:
                setattr(row, field, _seconds(change[field], f"windows[{number}].{field}"))
        if not 0 <= row.start < row.end <= annotation.caption.clip.duration + 0.5:
            raise ServiceError(
                f"Window {index + 1}: {row.start:g}-{row.end:g} s is not a span inside the clip "
                f"(0-{annotation.caption.clip.duration:g} s)."
            )
        if "modes" in change:
            modes = _modes(change["modes"], f"windows[{number}].modes")
            row.modes = _check_modes(annotation, modes, unit=f"window {index + 1}")
        if verdict == CorrectionPass.Verdict.ACCEPT:
            row.modes, row.scene, row.shot, row.start, row.end = [], window.scene, window.shot, window.start, window.end
    if created:
        WindowCorrection.objects.bulk_create(created.values())
    if changed:
        WindowCorrection.objects.bulk_update(
            changed.values(), ["verdict", "scene", "shot", "start", "end", "modes"]
        )
    return sorted([*rows, *created.values()], key=lambda row: row.window.index)


def _check_timeline(windows: Any, duration: float) -> list[dict[str, Any]]:
    if not isinstance(windows, list):
        raise ServiceError("segmentation.windows must be a list of windows.")
    clean = []
    previous_end = 0.0
    for number, window in enumerate(windows, start=1):
        window = _mapping(window, f"segmentation.windows[{number - 1}]")
        if "start" not in window or "end" not in window:
            raise ServiceError(f"Corrected window {number} needs numeric start and end.")
        start = _seconds(window["start"], f"segmentation.windows[{number - 1}].start")
        end = _seconds(window["end"], f"segmentation.windows[{number - 1}].end")
        if not 0 <= start < end <= duration + 0.5:
            raise ServiceError(f"Corrected window {number}: {start:g}-{end:g} s is not inside the clip.")
        if start < previous_end:
            raise ServiceError(f"Corrected window {number} starts before window {number - 1} ends.")
        previous_end = end
        place = f"segmentation.windows[{number - 1}]"
        clean.append({
            "start": start, "end": end,
            "scene": _text(window.get("scene", ""), f"{place}.scene", MAX_WINDOW_TEXT_CHARS),
            "shot": _text(window.get("shot", ""), f"{place}.shot", MAX_WINDOW_TEXT_CHARS),
        })
    return clean


def _apply_segmentation(annotation: Annotation, correction: CorrectionPass, change: Any) -> None:
    change = _mapping(change, "segmentation")
    if annotation.overview_locked_at is None:
        raise ServiceError("Submit the overview verdict first: segmentation is judged in the window pass.")
    if "verdict" in change:
        if change["verdict"] not in CorrectionPass.Verdict.values:
            raise ServiceError(f"Unknown segmentation verdict {change['verdict']!r}.")
        correction.segmentation_verdict = change["verdict"]
    if "modes" in change:
        modes = _modes(change["modes"], "segmentation.modes")
        correction.segmentation_modes = _check_modes(annotation, modes, unit="segmentation")
    if "windows" in change:
        correction.corrected_windows = _check_timeline(change["windows"], annotation.caption.clip.duration)
    if correction.segmentation_verdict == CorrectionPass.Verdict.ACCEPT:
        correction.segmentation_modes, correction.corrected_windows = [], []


@transaction.atomic
def annotation_save(
    *, annotation_id: int, actor, base_version: int, changes: Mapping[str, Any]
) -> Annotation:
    """Autosave part of the annotator's pass. Keys of `changes`, all optional:

    overview {verdict, text, modes} · windows [{index, verdict, scene, shot, start, end, modes}] ·
    segmentation {verdict, modes, windows} · ui_state {...} · active_seconds (to add) ·
    telemetry {...}. Refused with Conflict when `base_version` is not the current version.
    """
    changes = _mapping(changes, "changes")
    # Checked before anything is written; written by the versioned UPDATE itself, so a save
    # is one read, one UPDATE and, when the pass changed, its rows and one audit event.
    fields: dict[str, Any] = {}
    if "ui_state" in changes:
        ui_state = dict(_mapping(changes["ui_state"], "ui_state"))
        if len(json.dumps(ui_state)) > MAX_UI_STATE_CHARS:
            raise ServiceError(
                f"ui_state is longer than {MAX_UI_STATE_CHARS:,} characters of JSON."
            )
        fields["ui_state"] = ui_state
    telemetry = _checked_telemetry(changes["telemetry"]) if "telemetry" in changes else None
    if "active_seconds" in changes:
        seconds = _seconds(changes["active_seconds"], "active_seconds")
        fields["active_seconds"] = Added(
            "active_seconds", min(max(seconds, 0.0), MAX_ACTIVE_SECONDS_PER_SAVE)
        )

    def also(current: Annotation) -> dict[str, Any]:
        if telemetry is None:
            return fields
        return {**fields, "telemetry": {**current.telemetry, **telemetry}}

    annotation = _claim_version(
        annotation_id, base_version, workflow.EDITABLE, annotator=actor, also=also
    )
    # Most autosaves carry a text edit; the rest (position, time, telemetry) skip the pass.
    touches_pass = any(key in changes for key in ("overview", "windows", "segmentation"))
    if touches_pass:
        annotation.annotator_pass_snapshot = _save_pass_changes(annotation, actor, changes)
    return annotation


def _checked_telemetry(telemetry: Any) -> dict[str, Any]:
    """Telemetry the review queue can read: its `watched_share` ranks fast accepts."""
    if not isinstance(telemetry, Mapping):
        raise ServiceError("telemetry must be an object.")
    share = telemetry.get("watched_share", 0)
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
        raise ServiceError(
            f"telemetry.watched_share must be a number from 0 to 1, not {share!r:.40}."
        )
    return dict(telemetry)


def _check_reopened(annotation: Annotation, changes: Mapping[str, Any]) -> None:
    """After a return that names units, only those units may change."""
    if not annotation.returned_units:
        return
    touched = []
    if "overview" in changes:
        touched.append(returns.OVERVIEW)
    for change in changes.get("windows", []) or []:
        if isinstance(change, Mapping) and isinstance(change.get("index"), int):
            touched.append(returns.window_unit(change["index"]))
    if "segmentation" in changes:
        touched.append(returns.SEGMENTATION)
    closed = [unit for unit in touched if unit not in returns.reopened(annotation.returned_units)]
    if closed:
        names = ", ".join(returns.unit_label(unit) for unit in closed)
        raise ServiceError(f"QC did not return {names}: it stays as you submitted it.")


def _save_pass_changes(annotation: Annotation, actor, changes: Mapping[str, Any]) -> dict[str, Any]:
    """Apply the changes to the annotator pass; give the pass's snapshot after them."""
    _check_reopened(annotation, changes)
    correction = _annotator_pass(annotation)
    rows = pass_window_rows(correction)
    before = pass_snapshot(correction, rows)
    if "overview" in changes:
        _apply_overview(annotation, correction, changes["overview"])
    if "windows" in changes:
        rows = _apply_windows(annotation, correction, changes["windows"], rows)
    if "segmentation" in changes:
        _apply_segmentation(annotation, correction, changes["segmentation"])
    after = pass_snapshot(correction, rows)
    if after != before:
        correction.save()
        # Only what changed, texts as patches: a save's event is about as large as the edit.
        _audit(annotation, actor, "save", *audit_diff.pass_changes(before, after))
    return after


def overview_problems(annotation: Annotation, correction: CorrectionPass) -> list[str]:
    original = annotation.caption.overview
    if correction.overview_verdict == CorrectionPass.Verdict.REJECT:
        problems = []
        if correction.overview_text.strip() == original.strip():
            problems.append("A rejected overview needs a corrected text that differs from the original.")
        if not correction.overview_modes:
            problems.append("A rejected overview needs at least one failure mode.")
        return problems
    if correction.overview_verdict == CorrectionPass.Verdict.ACCEPT:
        return []
    return ["Accept or reject the overview."]


@transaction.atomic
def overview_lock(*, annotation_id: int, actor, base_version: int) -> Annotation:
    """Submit the overview verdict: it is locked, and the window pass opens."""
    annotation = _claim_version(annotation_id, base_version, workflow.EDITABLE, annotator=actor)
    correction = _annotator_pass(annotation)
    problems = overview_problems(annotation, correction)
    if problems:
        raise ServiceError(" ".join(problems))
    if annotation.overview_locked_at is None:
        Annotation.objects.filter(pk=annotation.pk).update(
            overview_locked_at=timezone.now(), **_undo_window("lock_overview", actor)
        )
        _reread(annotation)
        _audit(annotation, actor, "lock_overview", {}, pass_snapshot(correction)["overview"])
    return annotation


def pass_problems(annotation: Annotation, correction: CorrectionPass) -> list[str]:
    """Everything that keeps a pass from being complete, in words for the person."""
    problems = overview_problems(annotation, correction)
    judged = {w.window_id: w for w in correction.windows.all()}
    for window in annotation.caption.windows.all():
        row = judged.get(window.pk)
        label = f"Window {window.index + 1}"
        if row is None or not row.verdict:
            problems.append(f"{label}: accept or reject it.")
        elif row.verdict == CorrectionPass.Verdict.REJECT:
            corrected = (row.scene, row.shot, row.start, row.end)
            unchanged = corrected == (window.scene, window.shot, window.start, window.end)
            if unchanged:
                problems.append(f"{label}: a rejected window needs a correction.")
            if not row.modes:
                problems.append(f"{label}: a rejected window needs at least one failure mode.")
    if not correction.segmentation_verdict:
        problems.append("Judge the segmentation: accept or reject the window boundaries.")
    elif correction.segmentation_verdict == CorrectionPass.Verdict.REJECT:
        if not correction.segmentation_modes:
            problems.append("A rejected segmentation needs at least one failure mode.")
        if not correction.corrected_windows:
            problems.append("A rejected segmentation needs the corrected window boundaries.")
    return problems


@transaction.atomic
def annotation_submit(
    *, annotation_id: int, actor, base_version: int, replies: Mapping[str, str] | None = None
) -> Annotation:
    """Send the complete annotation to QC.

    After a return, `replies` maps returned units to the annotator's answer to the
    reviewer's comment; a returned unit resubmitted unchanged needs one. The replies are
    kept beside the comments (for the reviewer) and in the audit trail.
    """
    annotation = _claim_version(annotation_id, base_version, workflow.EDITABLE, annotator=actor)
    correction = _annotator_pass(annotation)
    if annotation.overview_locked_at is None:
        raise ServiceError("Submit the overview verdict first.")
    problems = pass_problems(annotation, correction)
    replies = {str(unit): str(text or "").strip() for unit, text in (replies or {}).items()}
    for unit, text in replies.items():
        _text(text, f"replies.{unit[:40]}", MAX_RETURN_COMMENT_CHARS)
    returned = annotation.returned_units
    strays = sorted(set(replies) - returns.reopened(returned))
    if strays:
        problems.append(f"Only returned units take a reply, not {', '.join(strays)}.")
    snapshot = pass_snapshot(correction)
    problems += returns.unanswered(returned, snapshot, replies)
    if problems:
        raise ServiceError(" ".join(problems))
    thread = [
        {**item, "reply": replies.get(item["unit"], ""),
         "changed": returns.unit_value(snapshot, item["unit"]) != item.get("before")}
        for item in returned
    ]
    # Undone, the annotation goes back to how it was before: after a return, with its comments.
    before = {"submitted_at": annotation.submitted_at.isoformat() if annotation.submitted_at else None,
              "return_comment": annotation.return_comment, "returned_units": annotation.returned_units}
    Annotation.objects.filter(pk=annotation.pk).update(
        state=workflow.SUBMITTED, submitted_at=timezone.now(), return_comment="",
        returned_units=[{k: v for k, v in item.items() if k != "changed"} for item in thread],
        **_undo_window("submit", actor, before),
    )
    annotation_risk_refresh(caption_id=annotation.caption_id)
    _reread(annotation)
    after: dict[str, Any] = {"state": annotation.state}
    if thread:
        after["replies"] = [
            {"unit": item["unit"], "comment": item["comment"], "reply": item["reply"],
             "changed": item["changed"]}
            for item in thread
        ]
    _audit(annotation, actor, "submit", {"state": workflow.IN_PROGRESS}, after)
    return annotation


SUBMITTED_ONCE = (workflow.SUBMITTED, workflow.IN_REVIEW, workflow.APPROVED)


def annotation_risk_refresh(*, caption_id: int) -> None:
    """Store the review risk (annotation.risk) of the caption's submitted annotations.

    Called when one of them is submitted: its own signals are new, and a second annotator's
    verdict can make the annotations of the caption disagree. A handful of queries, whatever
    the size of the study.
    """
    _risks_store(Annotation.objects.filter(caption_id=caption_id))


def annotations_risk_refresh(*, study: Study) -> int:
    """annotation_risk_refresh for every caption of the study at once, for annotations stored
    without being submitted here (a bundle import): the same risks, from the same handful of
    queries and one UPDATE statement. Returns how many changed."""
    return _risks_store(Annotation.objects.filter(caption__clip__study=study))


def _risks_store(scope) -> int:
    """Compute and store the risk of the submitted annotations in `scope` (a queryset of whole
    captions' annotations: disagreement is between the annotations of one caption)."""
    submitted = scope.filter(state__in=SUBMITTED_ONCE)
    annotations = list(submitted.select_related("caption__clip__study").order_by("pk"))
    if not annotations:
        return 0
    passes = {
        p.annotation_id: p
        for p in CorrectionPass.objects.filter(annotation__in=submitted, kind=CorrectionPass.Kind.ANNOTATOR)
    }
    windows: dict[int, list[risk.WindowJudgement]] = {}
    rows = WindowCorrection.objects.filter(
        correction_pass__annotation__in=submitted, correction_pass__kind=CorrectionPass.Kind.ANNOTATOR
    ).values_list("correction_pass_id", "verdict", "scene", "shot", "window__scene", "window__shot")
    for pass_id, verdict, scene, shot, original_scene, original_shot in rows:
        windows.setdefault(pass_id, []).append(
            risk.WindowJudgement(verdict, f"{original_scene} {original_shot}", f"{scene} {shot}")
        )
    verdicts: dict[int, set[str]] = {}
    for annotation in annotations:
        if annotation.pk in passes:
            verdicts.setdefault(annotation.caption_id, set()).add(passes[annotation.pk].overview_verdict)
    changed = []
    for annotation in annotations:
        correction = passes.get(annotation.pk)
        if correction is None:
            continue
        study = annotation.caption.clip.study
        score, reasons = risk.review_risk(
            original_overview=annotation.caption.overview,
            overview_verdict=correction.overview_verdict,
            overview_text=correction.overview_text,
            windows=windows.get(correction.pk, []),
            active_seconds=annotation.active_seconds,
            telemetry=annotation.telemetry,
            disagreement=len(verdicts[annotation.caption_id]) > 1,
            scale=max(study.word_thresholds or [16]),
            cut=study.near_total_cut,
        )
        if (score, reasons) != (annotation.risk, annotation.risk_reasons):
            annotation.risk, annotation.risk_reasons = score, reasons
            changed.append(annotation)
    if changed:
        # One statement, its parameters sent once per row: bulk_update would compile a CASE
        # branch per annotation, which costs more than computing the risks.
        with connection.cursor() as cursor:
            cursor.executemany(
                f"UPDATE {Annotation._meta.db_table} SET risk = %s, risk_reasons = %s WHERE id = %s",
                [(a.risk, json.dumps(a.risk_reasons), a.pk) for a in changed],
            )
    return len(changed)


# --------------------------------------------------------------------------- QC


def _require_reviewer(annotation: Annotation, actor) -> None:
    study = annotation.caption.clip.study
    if Membership.Role.REVIEWER not in _roles(study, actor):
        raise NotAllowed("Only the study's QC reviewers may review annotations.")
    if annotation.annotator_id == actor.pk:
        raise NotAllowed("Nobody reviews their own annotation.")
    # Their own verdict on the same caption would weigh in: reviews must be independent.
    if Annotation.objects.filter(caption_id=annotation.caption_id, annotator=actor).exists():
        raise NotAllowed(
            "You annotated this caption yourself, so another reviewer reviews this version of it."
        )


@transaction.atomic
def review_claim(*, annotation_id: int, actor, minutes: int = CLAIM_MINUTES) -> Annotation:
    """Lock a submitted annotation for this reviewer for `minutes`; an expired claim may be taken over."""
    annotation = Annotation.objects.select_related("caption__clip__study").get(pk=annotation_id)
    _require_reviewer(annotation, actor)
    now = timezone.now()
    expires = now + timedelta(minutes=minutes)
    # The conditions sit on the updated row itself, not in a subquery: PostgreSQL rechecks them
    # after waiting for a concurrent claim's lock, whereas a subquery keeps its old snapshot and
    # would let both of two racing reviewers win.
    # A submission is the annotator's own until their undo window passes.
    undone_possible = Q(undo_until__gt=now)
    claimable = (
        (Q(state=workflow.SUBMITTED) & ~undone_possible)
        | Q(state=workflow.IN_REVIEW, claim_expires_at__lt=now)
        | Q(state=workflow.IN_REVIEW, reviewer=actor)
    )
    moved = Annotation.objects.filter(claimable, pk=annotation_id).update(
        state=workflow.IN_REVIEW, reviewer=actor, claim_expires_at=expires, version=F("version") + 1
    )
    _reread(annotation)
    if not moved:
        holder = annotation.reviewer.username if annotation.reviewer_id else "nobody"
        claim = "."
        if annotation.state == workflow.IN_REVIEW:
            claim = f", claimed by {holder} until {annotation.claim_expires_at:%H:%M} UTC."
        elif annotation.state == workflow.SUBMITTED and annotation.undo_until and annotation.undo_until > now:
            raise Conflict("This annotation was submitted a moment ago and may still be undone; "
                           "it reaches the review queue in a few seconds.", annotation_snapshot(annotation))
        raise Conflict(f"This annotation is {annotation.get_state_display()}{claim}", annotation_snapshot(annotation))
    _audit(annotation, actor, "claim", {}, {"state": annotation.state, "claim_expires_at": expires.isoformat()})
    return annotation


@transaction.atomic
def review_claim_next(
    *, study: Study, actor, order: str = "risk", minutes: int = CLAIM_MINUTES
) -> Annotation | None:
    """Claim the next item of the review queue for this reviewer (riskiest or oldest first,
    never their own); None when nothing is waiting.

    Candidates are submitted items and in-review items whose claim expired; the first of
    each is picked with SELECT ... FOR UPDATE SKIP LOCKED in the order of its index, so fifty
    reviewers pressing at once get fifty different items without waiting for each other.
    The claim itself is the conditional update of review_claim.
    """
    if Membership.Role.REVIEWER not in _roles(study, actor):
        raise NotAllowed("Only the study's QC reviewers may review annotations.")
    if order not in REVIEW_ORDERS:
        raise ServiceError(f"Unknown order {order!r}: use {' or '.join(REVIEW_ORDERS)}.")
    fields = REVIEW_ORDERS[order]
    ordering = [f"-{name}" if descending else name for name, descending in fields]
    now = timezone.now()
    for _attempt in range(3):
        waiting = review_candidates(study=study, reviewer=actor, states=[workflow.SUBMITTED])
        expired = review_candidates(
            study=study, reviewer=actor, states=[workflow.IN_REVIEW]
        ).filter(claim_expires_at__lt=now)
        picks = []
        for rows in (waiting, expired):
            row = (
                rows.select_for_update(skip_locked=True, of=("self",))
                .order_by(*ordering)
                .values("pk", "risk", "submitted_at")
                .first()
            )
            if row is not None:
                picks.append(row)
        if not picks:
            return None

        def key(row: Mapping[str, Any]) -> tuple:
            values = [-row[n] if desc else row[n] for n, desc in fields if n != "id"]
            return (*values, row["pk"])

        chosen = min(picks, key=key)["pk"]
        try:
            return review_claim(annotation_id=chosen, actor=actor, minutes=minutes)
        except Conflict:
            continue  # taken between the pick and the claim (SQLite); pick again
    raise Conflict("Other reviewers took the next items at the same moment; press again.", {})


def _finish_review(annotation_id: int, actor, action: str, **fields: Any) -> Annotation:
    target = workflow.TRANSITIONS[action].target
    moved = Annotation.objects.filter(
        pk=annotation_id, state=workflow.IN_REVIEW, reviewer=actor, claim_expires_at__gte=timezone.now()
    ).update(state=target, version=F("version") + 1, **fields)
    annotation = Annotation.objects.select_related("caption__clip__study").get(pk=annotation_id)
    if not moved:
        raise Conflict(
            "Claim this annotation first (your claim may have expired or another reviewer holds it).",
            annotation_snapshot(annotation),
        )
    return annotation


@transaction.atomic
def review_approve(*, annotation_id: int, actor) -> Annotation:
    annotation = Annotation.objects.select_related("caption__clip__study").get(pk=annotation_id)
    _require_reviewer(annotation, actor)
    annotation = _finish_review(
        annotation_id, actor, "approve", reviewed_at=timezone.now(), **_undo_window("approve", actor)
    )
    _after_final_verdict(annotation.pk)
    _audit(annotation, actor, "approve", {"state": workflow.IN_REVIEW}, {"state": annotation.state})
    return annotation


@transaction.atomic
def review_amend(*, annotation_id: int, actor, changes: Mapping[str, Any]) -> Annotation:
    """Approve with the reviewer's amendments stored as the QC pass, beside the annotator's."""
    changes = _mapping(changes, "changes")
    annotation = Annotation.objects.select_related("caption__clip__study", "taxonomy").get(pk=annotation_id)
    _require_reviewer(annotation, actor)
    annotator_pass = _annotator_pass(annotation)
    qc, _ = CorrectionPass.objects.get_or_create(
        annotation=annotation,
        kind=CorrectionPass.Kind.QC,
        defaults={
            "author": actor,
            "overview_verdict": annotator_pass.overview_verdict,
            "overview_text": annotator_pass.overview_text,
            "overview_modes": annotator_pass.overview_modes,
            "segmentation_verdict": annotator_pass.segmentation_verdict,
            "segmentation_modes": annotator_pass.segmentation_modes,
            "corrected_windows": annotator_pass.corrected_windows,
        },
    )
    for row in annotator_pass.windows.all():
        WindowCorrection.objects.get_or_create(
            correction_pass=qc, window_id=row.window_id,
            defaults={f: getattr(row, f) for f in ("verdict", "scene", "shot", "start", "end", "modes")},
        )
    # The overview lock applies to the annotator only; QC may amend the overview too.
    unlocked = Annotation(pk=annotation.pk, caption=annotation.caption, taxonomy=annotation.taxonomy)
    if "overview" in changes:
        _apply_overview(unlocked, qc, changes["overview"])
    unlocked.overview_locked_at = annotation.overview_locked_at
    if "windows" in changes:
        _apply_windows(unlocked, qc, changes["windows"], pass_window_rows(qc))
    if "segmentation" in changes:
        _apply_segmentation(unlocked, qc, changes["segmentation"])
    qc.save()
    problems = pass_problems(annotation, qc)
    if problems:
        raise ServiceError("The amended version is incomplete: " + " ".join(problems))
    annotation = _finish_review(annotation_id, actor, "amend", reviewed_at=timezone.now())
    _after_final_verdict(annotation.pk)
    after = {**pass_snapshot(qc), "edit_size": qc_edit_size(annotation, annotator_pass, qc)}
    _audit(annotation, actor, "amend", pass_snapshot(annotator_pass), after)
    return annotation


def _size(original: str, corrected: str, cut: float) -> dict[str, Any]:
    size = edits.edit_size(original, corrected, near_total_cut=cut)
    return {"words_changed": size.words_changed, "char_similarity": round(size.char_similarity, 4),
            "near_total": size.near_total}


def qc_edit_size(annotation: Annotation, annotator_pass: CorrectionPass, qc: CorrectionPass) -> dict[str, Any]:
    """Edit size from the annotator's version to the QC version: the overview, and each window QC changed.

    A version is the text it stands for: the original where the pass accepted it,
    else the corrected text. A window's text is its scene and shot together.
    """
    cut = annotation.caption.clip.study.near_total_cut
    original = annotation.caption.overview

    def overview_of(correction: CorrectionPass) -> str:
        rejected = correction.overview_verdict == CorrectionPass.Verdict.REJECT
        return correction.overview_text if rejected else original

    fields = ("verdict", "scene", "shot", "start", "end", "modes")
    mine = {row.window_id: row for row in annotator_pass.windows.all()}
    windows = []
    for row in qc.windows.select_related("window").order_by("window__index"):
        before = mine.get(row.window_id)
        if before is not None and all(getattr(before, f) == getattr(row, f) for f in fields):
            continue
        source = before or row.window
        windows.append({"index": row.window.index,
                        **_size(f"{source.scene} {source.shot}", f"{row.scene} {row.shot}", cut)})
    return {"overview": _size(overview_of(annotator_pass), overview_of(qc), cut), "windows": windows}


@transaction.atomic
def review_return(
    *, annotation_id: int, actor, units: Sequence[Mapping[str, Any]], comment: str = ""
) -> Annotation:
    """Send the annotation back to its annotator, naming the units to fix, each with a comment.

    `units` is [{unit, comment}] with unit "overview", "segmentation" or "window:<index>"
    (see annotation.returns). Those units reopen for the annotator (a returned overview
    unlocks, with the window pass kept); the others stay as submitted. `comment` is an
    optional note on the whole annotation.
    """
    annotation = Annotation.objects.select_related("caption__clip__study").get(pk=annotation_id)
    _require_reviewer(annotation, actor)
    comment = _text(comment, "comment", MAX_RETURN_COMMENT_CHARS)
    if not isinstance(units, list):
        raise ServiceError("units must be a list of {unit, comment}.")
    for number, item in enumerate(units):
        if isinstance(item, Mapping) and "comment" in item:
            _text(item["comment"], f"units[{number}].comment", MAX_RETURN_COMMENT_CHARS)
    indices = annotation.caption.windows.values_list("index", flat=True)
    try:
        named = returns.parse_units(units, indices)
    except ValueError as exc:
        raise ServiceError(str(exc)) from None
    snapshot = pass_snapshot(_annotator_pass(annotation))
    returned = [{**item, "before": returns.unit_value(snapshot, item["unit"]), "reply": ""} for item in named]
    summary = comment.strip() or "; ".join(
        f"{returns.unit_label(item['unit'])}: {item['comment']}" for item in named
    )
    fields: dict[str, Any] = {"return_comment": summary, "returned_units": returned}
    if returns.OVERVIEW in returns.reopened(returned):
        fields["overview_locked_at"] = None
    annotation = _finish_review(annotation_id, actor, "return", **fields)
    _audit(annotation, actor, "return", {"state": workflow.IN_REVIEW}, {
        "state": annotation.state, "comment": summary,
        "units": [{"unit": item["unit"], "comment": item["comment"]} for item in named],
    })
    return annotation


@transaction.atomic
def review_release(*, annotation_id: int, actor) -> Annotation:
    """Give the actor's claim on an annotation back to the queue. Refused (Conflict) when the
    actor holds no claim on it: someone else's claim, or no claim at all."""
    moved = Annotation.objects.filter(pk=annotation_id, state=workflow.IN_REVIEW, reviewer=actor).update(
        state=workflow.SUBMITTED, claim_expires_at=None, version=F("version") + 1
    )
    annotation = Annotation.objects.select_related("caption__clip__study", "reviewer").get(pk=annotation_id)
    if not moved:
        if annotation.state == workflow.IN_REVIEW:
            holder = annotation.reviewer.username if annotation.reviewer_id else "nobody"
            message = f"This annotation is claimed by {holder}, not by you: only they release it."
        else:
            message = f"This annotation is {annotation.get_state_display()}: there is no claim of yours to release."
        raise Conflict(message, annotation_snapshot(annotation))
    _audit(annotation, actor, "release", {"state": workflow.IN_REVIEW}, {"state": annotation.state})
    return annotation


def final_pass(annotation: Annotation) -> CorrectionPass | None:
    """The final verdict: the QC pass where the reviewer amended, else the annotator's; None until approved."""
    if annotation.state != workflow.APPROVED:
        return None
    passes = {p.kind: p for p in annotation.passes.all()}
    return passes.get(CorrectionPass.Kind.QC) or passes.get(CorrectionPass.Kind.ANNOTATOR)


# --------------------------------------------------------------------------- undo


@transaction.atomic
def decision_undo(*, annotation_id: int, actor) -> Annotation:
    """Take back the annotation's last decisive action (locking the overview, submitting,
    approving) while its undo window is open, for the person who took it; audited as "undo".

    Refused with NotAllowed for anyone else, and with Conflict when there is nothing to undo
    or the window has passed (the change is then everyone's). The move back is a conditional
    UPDATE on the recorded window, and the database trigger refuses it once the window passed.
    """
    annotation = Annotation.objects.select_related("caption__clip__study").get(pk=annotation_id)
    record = annotation.undo or {}
    action = record.get("action")
    if action not in workflow.UNDOABLE or annotation.undo_until is None:
        raise Conflict("There is nothing to undo on this annotation.", annotation_snapshot(annotation))
    if record.get("actor") != actor.pk:
        raise NotAllowed("Only the person who took this decision may undo it.")
    now = timezone.now()
    if annotation.undo_until < now:
        raise Conflict(
            f"The {settings.UNDO_SECONDS} seconds to undo this have passed; it stands.",
            annotation_snapshot(annotation),
        )
    source, target = workflow.UNDOABLE[action]
    before = record.get("before") or {}
    fields: dict[str, Any] = {"state": target}
    if action == "lock_overview":
        fields["overview_locked_at"] = None
    elif action == "submit":
        fields.update(
            submitted_at=before.get("submitted_at"),
            return_comment=before.get("return_comment", ""),
            returned_units=before.get("returned_units", []),
        )
    else:  # approve: back to the reviewer's claim, as it was just before
        fields.update(reviewed_at=None, claim_expires_at=now + timedelta(minutes=CLAIM_MINUTES))
    moved = Annotation.objects.filter(
        pk=annotation_id, state=source, undo_until=annotation.undo_until, undo_until__gte=now
    ).update(undo_until=None, undo={}, version=F("version") + 1, **fields)
    _reread(annotation)
    if not moved:
        raise Conflict("This annotation changed meanwhile; there is nothing to undo now.",
                       annotation_snapshot(annotation))
    _audit(annotation, actor, "undo", {"state": source, "action": action},
           {"state": annotation.state, "undone": action})
    return annotation
