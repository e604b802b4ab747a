"""QC: claim, approve, amend, return, release, and undoing a decision."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.db.models.functions import Now
from django.utils import timezone

from annotation.errors import ServiceError
from annotation.models import (
    Annotation,
    AuditEvent,
    CorrectionPass,
    Membership,
    Study,
    WindowCorrection,
    Withdrawal,
)
from annotation.prepared import PreparedRead
from annotation.prepared_writes import insert, prepared_update
from annotation.rules import returns, workflow
from annotation.selectors.queues import REVIEW_ORDERS, review_candidates_of
from annotation.services.annotating import (
    _apply_overview,
    _apply_segmentation,
    _apply_windows,
    check_window_times,
    pass_problems,
    window_rows_write,
)
from annotation.services.annotation_common import (
    CLAIM_MINUTES,
    MAX_RETURN_COMMENT_CHARS,
    Conflict,
    NotAllowed,
    _after_final_verdict,
    _after_verdict_withdrawn,
    _annotator_pass,
    _audit,
    _mapping,
    _require_running,
    _reread,
    _roles,
    _text,
    _undo_window,
    annotation_snapshot,
    pass_snapshot,
    pass_window_rows,
    undo_seconds_of,
)
from annotation.services.consent import work_start_require
from annotation.services.guidelines import guideline_version_now
from annotation.services.withdrawal import withdrawn_work_message
from scoring.metrics.edits import EditSizing
from scoring.metrics.final import carry_window_amendments

# --------------------------------------------------------------------------- QC


def _require_reviewer(annotation: Annotation, actor) -> None:
    study = annotation.caption.clip.study
    if Membership.Role.REVIEWER not in _roles(study, actor):
        raise NotAllowed("Only the study's QC reviewers may review annotations.")
    _require_running(study)
    if annotation.annotator_id == actor.pk:
        raise NotAllowed("Nobody reviews their own annotation.")
    if annotation.purpose in (Annotation.Purpose.GOLD, Annotation.Purpose.PRACTICE):
        raise NotAllowed("This annotation is not reviewed: QC reviews the study's work.")
    withdrawal = Withdrawal.objects.filter(study=study, user_id=annotation.annotator_id).only("at").first()
    if withdrawal is not None:
        raise NotAllowed(withdrawn_work_message(study, withdrawal.at))
    # Their own verdict on the same caption would weigh in: reviews must be independent.
    if Annotation.objects.filter(caption_id=annotation.caption_id, annotator=actor).exists():
        raise NotAllowed(
            "You annotated this caption yourself, so another reviewer reviews this version of it."
        )


def _claim_update(annotation_id: int, actor, *, now, expires) -> int:
    """Claim the annotation for `actor` until `expires` if it may be claimed now: submitted (and
    past its undo window), or in review with an expired claim or one of the actor's own. One
    conditional UPDATE (_claim_write); gives the rows it changed (0 or 1)."""
    return _claim_write(annotation_id=annotation_id, reviewer_id=actor.pk, now=now, expires=expires)


@prepared_update
def _claim_write(*, annotation_id: int, reviewer_id: int, now, expires):
    """_claim_update's UPDATE."""
    # The conditions sit on the updated row itself, not in a subquery: PostgreSQL rechecks them
    # after waiting for a concurrent claim's lock, whereas a subquery keeps its old snapshot and
    # would let both of two racing reviewers win.
    # A submission is the annotator's own until their undo window passes.
    undone_possible = Q(undo_until__gt=now)
    claimable = (
        (Q(state=workflow.SUBMITTED) & ~undone_possible)
        | Q(state=workflow.IN_REVIEW, claim_expires_at__lt=now)
        | Q(state=workflow.IN_REVIEW, reviewer_id=reviewer_id)
    )
    values = {"state": workflow.IN_REVIEW, "reviewer_id": reviewer_id, "claim_expires_at": expires,
              "version": F("version") + 1}
    return Annotation.objects.filter(claimable, pk=annotation_id), values


@transaction.atomic
def review_claim(*, annotation_id: int, actor, minutes: int = CLAIM_MINUTES) -> Annotation:
    """Lock a submitted annotation for this reviewer for `minutes`; an expired claim may be taken over."""
    annotation = Annotation.objects.select_related("caption__clip__study").get(pk=annotation_id)
    _require_reviewer(annotation, actor)
    work_start_require(annotation.caption.clip.study, actor, withdrawal_counts=False)
    now = timezone.now()
    expires = now + timedelta(minutes=minutes)
    moved = _claim_update(annotation_id, actor, now=now, expires=expires)
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


def _review_pick(order: str):
    """The first item in `order` of the review queue: a submitted item, or one in review whose
    claim expired; picked with SELECT ... FOR UPDATE SKIP LOCKED (a prepared read)."""
    ordering = [f"-{name}" if descending else name for name, descending in REVIEW_ORDERS[order]]

    def build(*, study_id: int, reviewer_id: int):
        rows = review_candidates_of(study_id=study_id, reviewer_id=reviewer_id,
                                    states=[workflow.SUBMITTED, workflow.IN_REVIEW], now=Now())
        # The queue's index holds both states in this order; what it steps over are the claims
        # still held, the items being reviewed right now.
        rows = rows.filter(Q(state=workflow.SUBMITTED) | Q(state=workflow.IN_REVIEW, claim_expires_at__lt=Now()))
        return rows.select_for_update(skip_locked=True, of=("self",)).order_by(*ordering).values("pk")[:1]

    build.__qualname__ = f"review pick ({order})"
    # The study and the reviewer are written into the SQL, so that PostgreSQL keeps a plan made
    # for them (see annotation.prepared): the best plan walks the queue's index for a large study
    # and starts from the clips of a small one, and how many of the queue's captions the reviewer
    # annotated decides how far it walks.
    return PreparedRead(build, written=("study_id", "reviewer_id"))


# Per order, the pick of review_claim_next.
REVIEW_PICKS = {order: _review_pick(order) for order in REVIEW_ORDERS}


@transaction.atomic
def review_claim_next(
    *, study: Study, actor, order: str = "risk", minutes: int = CLAIM_MINUTES
) -> int | None:
    """Claim the next item of the review queue for this reviewer (riskiest or oldest first,
    never their own) and give its id; None when nothing is waiting.

    Candidates are submitted items and in-review items whose claim expired; the first is
    picked with SELECT ... FOR UPDATE SKIP LOCKED in the order of its index, so fifty
    reviewers pressing at once get fifty different items without waiting for each other.
    The claim itself is the conditional update of review_claim.
    """
    if Membership.Role.REVIEWER not in _roles(study, actor):
        raise NotAllowed("Only the study's QC reviewers may review annotations.")
    _require_running(study)
    work_start_require(study, actor, withdrawal_counts=False)
    if order not in REVIEW_ORDERS:
        raise ServiceError(f"Unknown order {order!r}: use {' or '.join(REVIEW_ORDERS)}.")
    for _attempt in range(3):
        picked = REVIEW_PICKS[order](study_id=study.pk, reviewer_id=actor.pk)
        if not picked:
            return None
        chosen = picked[0]["pk"]
        # The candidates are already only what this reviewer may review (review_candidates: not
        # their own, nor a caption they annotated, nor gold or practice; their role and the
        # study's state are checked above), so the claim is its conditional UPDATE alone.
        expires = timezone.now() + timedelta(minutes=minutes)
        if not _claim_update(chosen, actor, now=timezone.now(), expires=expires):
            continue  # taken between the pick and the claim (SQLite); pick again
        insert(AuditEvent(study_id=study.pk, annotation_id=chosen, actor=actor, action="claim", before={},
                          after={"state": workflow.IN_REVIEW, "claim_expires_at": expires.isoformat()}))
        return chosen
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
        annotation_id, actor, "approve", reviewed_at=timezone.now(),
        review_guideline_version_id=guideline_version_now(annotation.caption.clip.study_id),
        **_undo_window("approve", actor, study=annotation.caption.clip.study),
    )
    _after_final_verdict(annotation.pk)
    _audit(annotation, actor, "approve", {"state": workflow.IN_REVIEW}, {"state": annotation.state})
    return annotation


@transaction.atomic
def review_amend(*, annotation_id: int, actor, changes: Mapping[str, Any]) -> Annotation:
    """Approve with the reviewer's amendments stored as the QC pass, beside the annotator's.

    The QC pass starts as a copy of the annotator's. Undone (decision_undo, while its window is
    open), the QC pass is deleted again: the annotation is as it was before, in review.
    """
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
    _copy_window_rows(annotation, annotator_pass, qc)
    # The overview lock applies to the annotator only; QC may amend the overview too.
    unlocked = Annotation(pk=annotation.pk, caption=annotation.caption, taxonomy=annotation.taxonomy)
    if "overview" in changes:
        _apply_overview(unlocked, qc, changes["overview"])
    unlocked.overview_locked_at = annotation.overview_locked_at
    if "windows" in changes:
        _apply_windows(unlocked, qc, changes["windows"], pass_window_rows(qc))
    if "segmentation" in changes:
        _apply_segmentation(unlocked, qc, changes["segmentation"])
    segmentation = changes.get("segmentation")
    if not (isinstance(segmentation, Mapping) and "windows" in segmentation):
        _carry_into_timeline(annotation, annotator_pass, qc)
    guidelines_id = guideline_version_now(annotation.caption.clip.study_id)
    qc.guideline_version_id = guidelines_id
    qc.save()
    problems = pass_problems(annotation, qc)
    if problems:
        raise ServiceError("The amended version is incomplete: " + " ".join(problems))
    annotation = _finish_review(
        annotation_id, actor, "amend", reviewed_at=timezone.now(), review_guideline_version_id=guidelines_id,
        **_undo_window("amend", actor, study=annotation.caption.clip.study),
    )
    _after_final_verdict(annotation.pk)
    after = {**pass_snapshot(qc), "edit_size": qc_edit_size(annotation, annotator_pass, qc)}
    _audit(annotation, actor, "amend", pass_snapshot(annotator_pass), after)
    return annotation


def _carry_into_timeline(annotation: Annotation, annotator_pass: CorrectionPass, qc: CorrectionPass) -> None:
    """Where the segmentation stays rejected with the annotator's timeline, carry the windows the
    reviewer re-worded into it (:func:`scoring.metrics.final.carry_window_amendments`): otherwise
    the final timeline would keep the text the reviewer corrected."""
    if qc.segmentation_verdict != CorrectionPass.Verdict.REJECT or not qc.corrected_windows:
        return
    originals = [{"index": w.index, "start": w.start, "end": w.end, "scene": w.scene, "shot": w.shot}
                 for w in annotation.caption.windows.all()]
    qc.corrected_windows = carry_window_amendments(
        qc.corrected_windows, originals, pass_snapshot(annotator_pass)["windows"], pass_snapshot(qc)["windows"])


def _copy_window_rows(annotation: Annotation, annotator_pass: CorrectionPass, qc: CorrectionPass) -> None:
    """Start the QC pass's windows as the annotator's (those QC has not got yet), written in
    an order the database's overlap check accepts; an annotator pass stored with overlapping
    windows (before they were refused) is refused here, by name, not by the database."""
    windows = list(annotation.caption.windows.all())
    copied = {row.window_id for row in qc.windows.all()}
    rows = [
        WindowCorrection(correction_pass=qc, window_id=row.window_id,
                         **{f: getattr(row, f) for f in ("verdict", "scene", "shot", "start", "end", "modes")})
        for row in annotator_pass.windows.all() if row.window_id not in copied
    ]
    if not rows:
        return
    try:
        check_window_times(windows, [*qc.windows.all(), *rows])
    except ServiceError as error:
        raise ServiceError(f"The annotator's windows overlap; return it to them. {error}") from error
    stored = {row.window_id: (row.start, row.end) for row in qc.windows.all()}
    window_rows_write({w.pk: stored.get(w.pk, (w.start, w.end)) for w in windows}, rows)


def _size(original: str, corrected: str, sizing: EditSizing) -> dict[str, Any]:
    size = sizing.measure(original, corrected)
    return {"words_changed": size.words_changed, "char_similarity": round(size.char_similarity, 4),
            "near_total": size.near_total}


def qc_edit_size(annotation: Annotation, annotator_pass: CorrectionPass, qc: CorrectionPass) -> dict[str, Any]:
    """Edit size from the annotator's version to the QC version: the overview, and each window QC changed.

    A version is the text it stands for: the original where the pass accepted it,
    else the corrected text. A window's text is its scene and shot together.
    """
    sizing = EditSizing.of(annotation.caption.clip.study)
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
                        **_size(f"{source.scene} {source.shot}", f"{row.scene} {row.shot}", sizing)})
    return {"overview": _size(overview_of(annotator_pass), overview_of(qc), sizing),
            "windows": windows}


@transaction.atomic
def review_return(
    *, annotation_id: int, actor, units: Sequence[Mapping[str, Any]], comment: str = ""
) -> Annotation:
    """Send the annotation back to its annotator, naming the units to fix, each with a comment.

    `units` is [{unit, comment}] with unit "overview", "segmentation" or "window:<index>"
    (see annotation.rules.returns). Those units reopen for the annotator (a returned overview
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
    if len(summary) > MAX_RETURN_COMMENT_CHARS:
        # The units' own comments are kept whole in returned_units; the summary shown in lists
        # and the audit keeps to the limit of one comment.
        summary = summary[: MAX_RETURN_COMMENT_CHARS - 1].rstrip() + "…"
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
    _require_running(Study.objects.get(clips__captions__annotations=annotation_id))
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


def _delete_qc_pass(annotation: Annotation) -> None:
    """Delete the QC pass of an amendment being undone, while the row still says "approved,
    amend undoable": the database allows the delete only then (migration 0016)."""
    locked = Annotation.objects.select_for_update().filter(
        pk=annotation.pk, state=workflow.APPROVED, undo_until=annotation.undo_until
    ).first() is not None
    try:
        with transaction.atomic():
            if not locked:
                raise IntegrityError("changed meanwhile")
            CorrectionPass.objects.filter(annotation_id=annotation.pk, kind=CorrectionPass.Kind.QC).delete()
    except IntegrityError:
        _reread(annotation)
        raise Conflict("This annotation changed meanwhile, or its seconds to undo have passed; "
                       "the amendment stands.", annotation_snapshot(annotation)) from None


def _undo_window_passed(annotation: Annotation) -> Conflict:
    return Conflict(
        f"The {undo_seconds_of(annotation.caption.clip.study)} seconds to undo this have passed; it stands.",
        annotation_snapshot(annotation),
    )


@transaction.atomic
def decision_undo(*, annotation_id: int, actor) -> Annotation:
    """Take back the annotation's last decisive action (locking the overview, submitting,
    approving, amending and approving) while its undo window is open, for the person who took
    it; audited as "undo". Undoing an amendment deletes the QC pass it stored (the audit trail
    keeps it), so that the item is exactly as before: in review, claimed by the reviewer.

    Refused with NotAllowed for anyone else, and with Conflict when there is nothing to undo
    or the window has passed (the change is then everyone's). The move back is a conditional
    UPDATE on the recorded window, and the database trigger refuses it once the window passed.
    """
    annotation = Annotation.objects.select_related("caption__clip__study").get(pk=annotation_id)
    _require_running(annotation.caption.clip.study)
    record = annotation.undo or {}
    action = record.get("action")
    if action not in workflow.UNDOABLE or annotation.undo_until is None:
        raise Conflict("There is nothing to undo on this annotation.", annotation_snapshot(annotation))
    if record.get("actor") != actor.pk:
        raise NotAllowed("Only the person who took this decision may undo it.")
    now = timezone.now()
    if annotation.undo_until < now:
        raise _undo_window_passed(annotation)
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
    else:  # approve, amend: back to the reviewer's claim, as it was just before
        fields.update(reviewed_at=None, review_guideline_version=None,
                      claim_expires_at=now + timedelta(minutes=CLAIM_MINUTES))
    if action == "amend":
        _delete_qc_pass(annotation)
    try:
        with transaction.atomic():
            moved = Annotation.objects.filter(
                pk=annotation_id, state=source, undo_until=annotation.undo_until, undo_until__gte=now
            ).update(undo_until=None, undo={}, version=F("version") + 1, **fields)
    except IntegrityError:
        # The window passed between this check and the database's (the trigger reads the
        # database's clock, a little later): the decision stands, as just after the window.
        _reread(annotation)
        raise _undo_window_passed(annotation) from None
    _reread(annotation)
    if not moved:
        raise Conflict("This annotation changed meanwhile; there is nothing to undo now.",
                       annotation_snapshot(annotation))
    _audit(annotation, actor, "undo", {"state": source, "action": action},
           {"state": annotation.state, "undone": action})
    if action in ("approve", "amend"):
        _after_verdict_withdrawn(annotation.pk)  # its scores go with it
    return annotation
