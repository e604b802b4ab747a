"""Annotations from assignment to final verdict: assigning, saving drafts, submitting, QC.

Every action is a transaction that first moves the annotation with a conditional
UPDATE (on its state and, for saves, on the version the client based its change
on). When that touches no row, someone else acted first: the action is refused
with Conflict (409 in the API), carrying the current state so the person can choose.

The steps live in their own modules (annotation_common, assigning, annotating, risks,
review); this module gathers their public names so callers import from one place.
"""

# ruff: noqa: F401
from annotation.services.annotating import (
    _apply_overview,
    _apply_segmentation,
    _apply_windows,
    _check_reopened,
    _check_timeline,
    _checked_telemetry,
    _open,
    _save_pass_changes,
    annotation_open,
    annotation_save,
    annotation_start_next,
    annotation_submit,
    overview_lock,
    overview_problems,
    pass_problems,
)
from annotation.services.annotation_common import (
    CLAIM_MINUTES,
    FINAL_VERDICT_HOOKS,
    MAX_ACTIVE_SECONDS_PER_SAVE,
    MAX_RETURN_COMMENT_CHARS,
    MAX_UI_STATE_CHARS,
    REREAD_FIELDS,
    VERDICT_WITHDRAWN_HOOKS,
    Added,
    Conflict,
    NotAllowed,
    _after_final_verdict,
    _after_verdict_withdrawn,
    _annotator_pass,
    _audit,
    _check_modes,
    _claim_version,
    _mapping,
    _modes,
    _reread,
    _roles,
    _seconds,
    _text,
    _undo_offer,
    _undo_window,
    annotation_snapshot,
    pass_snapshot,
    pass_window_rows,
)
from annotation.services.assigning import (
    ASSIGN_BATCH,
    AssignmentReport,
    _annotations_create,
    annotations_assign,
)
from annotation.services.review import (
    _finish_review,
    _require_reviewer,
    _size,
    decision_undo,
    final_pass,
    qc_edit_size,
    review_amend,
    review_approve,
    review_claim,
    review_claim_next,
    review_release,
    review_return,
)
from annotation.services.risk import (
    SUBMITTED_ONCE,
    _risks_store,
    annotation_risk_refresh,
    annotations_risk_refresh,
)
