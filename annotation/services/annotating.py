"""The annotator's steps: open, autosave, lock the overview, submit."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Case, F, When
from django.utils import timezone

from annotation import prepared_writes
from annotation.errors import ServiceError
from annotation.interchange.formats import MAX_OVERVIEW_CHARS, MAX_WINDOW_TEXT_CHARS
from annotation.models import (
    Annotation,
    AuditEvent,
    CorrectionPass,
    Study,
    Window,
    WindowCorrection,
)
from annotation.prepared import prepared
from annotation.prepared_writes import prepared_update
from annotation.rules import audit_diff, returns, window_times, workflow
from annotation.services import gold
from annotation.services.annotation_common import (
    MAX_ACTIVE_SECONDS_PER_SAVE,
    MAX_RETURN_COMMENT_CHARS,
    MAX_UI_STATE_CHARS,
    Added,
    Conflict,
    NotAllowed,
    _annotator_pass,
    _audit,
    _check_modes,
    _claim_version,
    _mapping,
    _modes,
    _require_running,
    _reread,
    _seconds,
    _text,
    _undo_window,
    caption_windows,
    pass_snapshot,
    pass_window_rows,
    passes_as_read,
)
from annotation.services.consent import work_start_require
from annotation.services.guidelines import guideline_version_newest
from annotation.services.risk import (
    annotation_risk_refresh,
)
from annotation.services.study_state import Write, study_allows

QUALIFY_FIRST = ("This study asks its annotators to pass the practice set before real work: start with "
                 "your practice items.")

# Seconds of active time a save may credit beyond the wall time since the previous save.
ACTIVE_SLACK_SECONDS = 5.0

# --------------------------------------------------------------------------- annotator


@transaction.atomic
def annotation_open(*, annotation: Annotation, actor) -> Annotation:
    """The annotator starts (or restarts after a return) work on their annotation."""
    if annotation.annotator_id != actor.pk:
        raise NotAllowed("Only the assigned annotator may work on this annotation.")
    study = annotation.caption.clip.study
    withdrawal_counts = annotation.purpose != Annotation.Purpose.GOLD
    if annotation.state not in workflow.TRANSITIONS["open"].sources:
        # Withdrawn, timed out or without the current consent: refused in one read, as below.
        work_start_require(study, actor, withdrawal_counts=withdrawal_counts)
        if annotation.state == workflow.IN_PROGRESS and study_allows(annotation.caption.clip.study, Write.WORK):
            # Opening the workspace again starts a new session: its active time counts from now.
            now = timezone.now()
            Annotation.objects.filter(pk=annotation.pk).update(active_until=now)
            annotation.active_until = now
        return annotation
    work_start_require(study, actor, withdrawal_counts=withdrawal_counts)
    _require_running(study)
    if annotation.purpose in Annotation.REAL_WORK and not gold.real_work_allowed(study, actor):
        raise NotAllowed(QUALIFY_FIRST)
    _open(annotation.pk, actor, study_id=annotation.caption.clip.study_id)
    _reread(annotation)
    return annotation


def _open(annotation_id: int, actor, *, study_id: int) -> bool:
    """Move an assigned or returned annotation to in progress with one conditional update,
    with its annotator pass and the audit event; False when it was no longer openable.

    Three statements: the UPDATE, the pass's INSERT (a returned annotation keeps the pass it
    has) and the audit event's INSERT."""
    if not _open_update(annotation_id=annotation_id, now=timezone.now()):
        return False
    CorrectionPass.objects.bulk_create(
        [CorrectionPass(annotation_id=annotation_id, kind=CorrectionPass.Kind.ANNOTATOR, author_id=actor.pk)],
        ignore_conflicts=True,
    )
    prepared_writes.insert(AuditEvent(
        study_id=study_id, annotation_id=annotation_id, actor=actor, action="open",
        before={}, after={"state": workflow.IN_PROGRESS},
    ))
    return True


@prepared_update
def _open_update(*, annotation_id: int, now):
    """_open's UPDATE: an openable annotation in progress from `now`."""
    rows = Annotation.objects.filter(pk=annotation_id, state__in=sorted(workflow.TRANSITIONS["open"].sources))
    return rows, {"state": workflow.IN_PROGRESS, "version": F("version") + 1, "started_at": now, "active_until": now}


def _my_work(study_id: int, annotator_id: int):
    """The annotator's items of the study that are their work (not gold checks or practice)."""
    return Annotation.objects.filter(caption__clip__study_id=study_id, annotator_id=annotator_id).exclude(
        purpose__in=[Annotation.Purpose.GOLD, Annotation.Purpose.PRACTICE])


@prepared
def _started_item(*, study_id: int, annotator_id: int):
    """The annotator's first returned item, else their first in progress (pk and state)."""
    return (
        _my_work(study_id, annotator_id).filter(state__in=[workflow.RETURNED, workflow.IN_PROGRESS])
        .order_by(Case(When(state=workflow.RETURNED, then=0), default=1), "assigned_at", "id")
        .values("pk", "state")[:1]
    )


@prepared
def _openable_item(*, study_id: int, annotator_id: int, state: str):
    """The annotator's first item in `state` that no other press holds (its pk), locked."""
    return (
        _my_work(study_id, annotator_id).filter(state=state)
        .order_by("assigned_at", "id")
        .select_for_update(skip_locked=True, of=("self",))
        .values("pk")[:1]
    )


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
    _require_running(study)
    # Neither withdrawn nor without consent: before anything else, practice included.
    work_start_require(study, annotator)
    # A practice attempt comes first: a new annotator's queue starts with the practice set.
    gold.practice_begin(study=study, annotator=annotator)
    practice = gold.practice_next(study, annotator)
    if practice is not None:
        if _open(practice, annotator, study_id=study.pk) or Annotation.objects.filter(
                pk=practice, state=workflow.IN_PROGRESS).exists():
            return practice
    if not gold.real_work_allowed(study, annotator):
        return None
    for _attempt in range(3):
        # Returned and in-progress items are few: one read finds whether there is either.
        started = _started_item(study_id=study.pk, annotator_id=annotator.pk)
        if started and started[0]["state"] == workflow.IN_PROGRESS:
            return started[0]["pk"]
        state = workflow.RETURNED if started else workflow.ASSIGNED
        openable = _openable_item(study_id=study.pk, annotator_id=annotator.pk, state=state)
        if not openable:
            if state == workflow.ASSIGNED:
                return None
            continue  # the returned item was just taken by another press; look again
        chosen = openable[0]["pk"]
        if state == workflow.ASSIGNED:
            # At the study's gold rate, a hidden gold check comes before the next new item.
            check = gold.gold_check_take(study=study, annotator=annotator)
            if check is not None and _open(check, annotator, study_id=study.pk):
                return check
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
    windows = {w.index: w for w in caption_windows(caption_id=annotation.caption_id)}
    existing = {row.window_id: row for row in rows}
    stored = {row.window_id: (row.start, row.end) for row in rows}
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
    final = {row.window_id: row for row in [*rows, *created.values()]}
    check_window_times(windows.values(), final.values())
    before = {w.pk: stored.get(w.pk, (w.start, w.end)) for w in windows.values()}
    window_rows_write(before, [*created.values(), *changed.values()])
    return sorted(final.values(), key=lambda row: row.window.index)


def check_window_times(windows: Iterable[Window], rows: Iterable[WindowCorrection]) -> None:
    """Refuse a pass whose windows, at their effective times (the correction's where the pass
    has one, else the original window's), overlap; the message names both windows."""
    corrected = {row.window_id: (row.start, row.end) for row in rows}
    overlap = window_times.first_overlap(
        [(w.index, *corrected.get(w.pk, (w.start, w.end))) for w in windows]
    )
    if overlap is not None:
        raise ServiceError(overlap.message())


def window_rows_write(before: Mapping[int, tuple[float, float]], rows: Iterable[WindowCorrection]) -> None:
    """Write window corrections (new ones inserted, stored ones updated) in an order in which
    no row overlaps its neighbours as they stand when it is written: the database checks
    each row (migration 0016). `before` maps window ids to their effective times as stored.
    One INSERT and one UPDATE per layer of window_times.write_layers, usually one layer."""
    by_window = {row.window_id: row for row in rows}
    layers = window_times.write_layers(
        before, {window_id: (row.start, row.end) for window_id, row in by_window.items()}
    )
    for layer in layers:
        created = [by_window[w] for w in layer if by_window[w].pk is None]
        changed = [by_window[w] for w in layer if by_window[w].pk is not None]
        # One row (an autosave of one window, the usual) through a prepared write, several in
        # one bulk statement: either way one INSERT and one UPDATE.
        if len(created) == 1:
            prepared_writes.insert(created[0])
        elif created:
            WindowCorrection.objects.bulk_create(created)
        if len(changed) == 1:
            prepared_writes.save(changed[0])
        elif changed:
            WindowCorrection.objects.bulk_update(changed, ["verdict", "scene", "shot", "start", "end", "modes"])


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
    sent = _seconds(changes["active_seconds"], "active_seconds") if "active_seconds" in changes else None
    now = timezone.now()
    fields["last_saved_at"] = now

    def also(current: Annotation) -> dict[str, Any]:
        more = dict(fields)
        if sent is not None:
            credit = active_credit(current, sent, now)
            more["active_seconds"] = Added(credit)
            more["active_until"] = active_until_after(current, credit, now)
        if telemetry is not None:
            more["telemetry"] = {**current.telemetry, **telemetry}
        return more

    annotation = _claim_version(annotation_id, base_version, annotator=actor, also=also)
    # Most autosaves carry a text edit; the rest (position, time, telemetry) skip the pass.
    touches_pass = any(key in changes for key in ("overview", "windows", "segmentation"))
    if touches_pass:
        annotation.annotator_pass_snapshot = _save_pass_changes(annotation, actor, changes)
    return annotation


def _counted_since(annotation: Annotation, now: datetime) -> datetime:
    """Up to when the annotation's active time is already counted: when it was last opened or
    saved (`active_until`), or for rows from before that was kept, its last save or its start."""
    return annotation.active_until or annotation.last_saved_at or annotation.started_at or now


def active_credit(annotation: Annotation, sent: float, now: datetime) -> float:
    """The active seconds a save adds: what the client sent, but never more than the wall time
    since the item was opened or the time already counted (`active_until`), plus
    ACTIVE_SLACK_SECONDS for clocks and the network, nor more than MAX_ACTIVE_SECONDS_PER_SAVE.
    The slack is lent once: a credit beyond the wall time moves `active_until` past now, so the
    saves that follow at once add only the time that really passed."""
    wall = (now - _counted_since(annotation, now)).total_seconds() + ACTIVE_SLACK_SECONDS
    return min(max(sent, 0.0), max(wall, 0.0), MAX_ACTIVE_SECONDS_PER_SAVE)


def active_until_after(annotation: Annotation, credit: float, now: datetime) -> datetime:
    """`active_until` once `credit` seconds are added: now, or later by the slack it used."""
    return max(now, _counted_since(annotation, now) + timedelta(seconds=credit))


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


def _annotator_pass_as_read(annotation: Annotation) -> CorrectionPass:
    """The annotator pass as _claim_version read it with the annotation (no read of its own);
    made when there is none yet (the first save)."""
    found = next((p for p in passes_as_read(annotation) if p.kind == CorrectionPass.Kind.ANNOTATOR), None)
    return found if found is not None else _annotator_pass(annotation)


def _read_annotator_pass(annotation: Annotation) -> CorrectionPass:
    """_annotator_pass_as_read, with the passes as read kept on the annotation (`kept_passes`,
    see annotation_common._passes_of) so that the autosave's answer (which shows the QC pass
    too) reads none; the pass the save changes is that very object. Nothing is kept when the
    pass was made here."""
    passes = passes_as_read(annotation)
    correction = _annotator_pass_as_read(annotation)
    if correction in passes:
        annotation.kept_passes = passes
    return correction


def _save_pass_changes(annotation: Annotation, actor, changes: Mapping[str, Any]) -> dict[str, Any]:
    """Apply the changes to the annotator pass; give the pass's snapshot after them."""
    _check_reopened(annotation, changes)
    correction = _read_annotator_pass(annotation)
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
        prepared_writes.save(correction)
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
    annotation = _claim_version(annotation_id, base_version, annotator=actor)
    correction = _annotator_pass_as_read(annotation)
    problems = overview_problems(annotation, correction)
    if problems:
        raise ServiceError(" ".join(problems))
    if annotation.overview_locked_at is None:
        _lock_update(annotation_id=annotation.pk, now=timezone.now(),
                     **_undo_window("lock_overview", actor, study=annotation.caption.clip.study))
        _reread(annotation)
        _audit(annotation, actor, "lock_overview", {}, pass_snapshot(correction, window_rows=[])["overview"])
    return annotation


@prepared_update
def _lock_update(*, annotation_id: int, now, **undo: Any):
    """overview_lock's UPDATE: the overview locked `now`, with the undo window (undo_until, undo)."""
    return Annotation.objects.filter(pk=annotation_id), {"overview_locked_at": now, **undo}


@prepared_update
def _submit_update(*, annotation_id: int, now, returned_units: list, **undo: Any):
    """annotation_submit's UPDATE: submitted `now`, a return's comment cleared and its thread
    kept (`returned_units`), with the undo window (undo_until, undo; none for practice)."""
    return Annotation.objects.filter(pk=annotation_id), {
        "state": workflow.SUBMITTED, "submitted_at": now, "return_comment": "", "returned_units": returned_units,
        **undo}


@prepared_update
def _guidelines_update(*, correction_pass_id: int, study_id: int):
    """The pass's verdicts are given under the study's newest guideline version (none before any)."""
    return CorrectionPass.objects.filter(pk=correction_pass_id), {
        "guideline_version_id": guideline_version_newest(study_id)}


def pass_problems(
    annotation: Annotation, correction: CorrectionPass, rows: Sequence[WindowCorrection] | None = None
) -> list[str]:
    """Everything that keeps a pass from being complete, in words for the person. `rows` are
    its window corrections when the caller has them already (else they are read)."""
    problems = overview_problems(annotation, correction)
    judged = {w.window_id: w for w in (correction.windows.all() if rows is None else rows)}
    for window in caption_windows(caption_id=annotation.caption_id):
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
    annotation = _claim_version(annotation_id, base_version, annotator=actor)
    correction = _annotator_pass_as_read(annotation)
    if annotation.overview_locked_at is None:
        raise ServiceError("Submit the overview verdict first.")
    rows = pass_window_rows(correction)
    problems = pass_problems(annotation, correction, rows)
    replies = {str(unit): str(text or "").strip() for unit, text in (replies or {}).items()}
    for unit, text in replies.items():
        _text(text, f"replies.{unit[:40]}", MAX_RETURN_COMMENT_CHARS)
    returned = annotation.returned_units
    strays = sorted(set(replies) - returns.reopened(returned))
    if strays:
        problems.append(f"Only returned units take a reply, not {', '.join(strays)}.")
    snapshot = pass_snapshot(correction, rows)
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
    # A practice item's submission is final at once: its feedback shows the gold verdict.
    undo = ({} if annotation.purpose == Annotation.Purpose.PRACTICE
            else _undo_window("submit", actor, before, study=annotation.caption.clip.study))
    _submit_update(annotation_id=annotation.pk, now=timezone.now(),
                   returned_units=[{k: v for k, v in item.items() if k != "changed"} for item in thread], **undo)
    # The verdicts are given under the guidelines of this moment (again after a return).
    _guidelines_update(correction_pass_id=correction.pk, study_id=annotation.caption.clip.study_id)
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
    gold.practice_after_submit(annotation)
    return annotation


def passes_with_overlapping_windows(*, study: Study) -> list[dict[str, Any]]:
    """The study's correction passes whose windows overlap (stored before overlaps were
    refused), each with its annotation, state, annotator and the first overlap in words: window
    corrections at their effective times (read in caption order, one caption at a time), then
    corrected segmentations (their own window lists)."""
    rows = (
        WindowCorrection.objects.filter(correction_pass__annotation__caption__clip__study=study)
        .order_by("correction_pass__annotation__caption_id", "correction_pass_id")
        .values_list(
            "correction_pass_id", "correction_pass__kind", "correction_pass__annotation_id",
            "correction_pass__annotation__state", "correction_pass__annotation__annotator__username",
            "correction_pass__annotation__caption_id", "window_id", "start", "end",
        )
    )
    found: list[dict[str, Any]] = []
    passes: dict[int, dict[str, Any]] = {}
    windows: list[tuple[int, int, float, float]] = []
    caption_id = None

    def check() -> None:
        for item in passes.values():
            corrected = item.pop("times")
            overlap = window_times.first_overlap(
                [(index, *corrected.get(pk, (start, end))) for pk, index, start, end in windows]
            )
            if overlap is not None:
                found.append({**item, "problem": overlap.message()})

    for pass_id, kind, annotation_id, state, username, caption, window_id, start, end in rows.iterator():
        if caption != caption_id:
            check()
            caption_id, passes = caption, {}
            windows = list(Window.objects.filter(caption_id=caption).values_list("pk", "index", "start", "end"))
        item = passes.setdefault(pass_id, {
            "annotation": annotation_id, "kind": kind, "state": state, "annotator": username, "times": {},
        })
        item["times"][window_id] = (start, end)
    check()
    return found + _segmentations_overlapping(study)


def _segmentations_overlapping(study: Study) -> list[dict[str, Any]]:
    """The study's passes whose corrected segmentation (a rejected segmentation's own window
    list) has a window that ends after the next one starts: one read of the passes that have one."""
    rows = (
        CorrectionPass.objects.filter(annotation__caption__clip__study=study)
        .exclude(corrected_windows=[])
        .order_by("annotation_id", "pk")
        .values_list("kind", "annotation_id", "annotation__state", "annotation__annotator__username",
                     "corrected_windows")
    )
    found = []
    for kind, annotation_id, state, username, windows in rows.iterator():
        timeline = [(number, float(w["start"]), float(w["end"])) for number, w in enumerate(windows)
                    if isinstance(w, dict) and _is_number(w.get("start")) and _is_number(w.get("end"))]
        overlap = window_times.first_overlap(timeline)
        if overlap is not None:
            found.append({"annotation": annotation_id, "kind": kind, "state": state, "annotator": username,
                          "problem": "Corrected segmentation: " + overlap.message()})
    return found


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
