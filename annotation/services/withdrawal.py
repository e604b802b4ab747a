"""A member withdrawing from a study: an annotator (invited or recruited through a link) may
leave at any time, whatever the study's state, and withdrawing twice changes nothing.

- **Claims released**: their waiting items (assigned, in progress, returned) go back to the
  pool. The rows stay (annotations are never deleted), but a caption held only by withdrawn
  people counts as nobody's when captions are given (recruitment's new participants, the
  admin's assignment): annotation.selectors.counted.holding_annotations.
- **Excluded**: none of their annotations counts in the profile, Table 1, scoring or the
  release from then on (annotation.selectors.counted); the exports say how many were left out.
- **Erased**, when they ask or the study's ``erase_on_withdrawal`` says so: the content of their
  annotations (texts, verdicts, failure modes, corrected windows, return comments and replies,
  the workspace's saved place and watch telemetry, the content of their audit events, and the
  scores and shared cache entries computed from their texts: scoring.erasure, through
  ERASURE_HOOKS) is removed in one
  transaction; what is left is the audit record ``participant_erase`` naming the
  person and how many annotations, with no content.
- **Not reviewed**: their items leave the QC review queue, and claiming, approving, amending or
  returning one is refused saying why (:func:`withdrawn_work_message`).
- **No more work**: the workflow refuses them with a sentence saying they withdrew
  (:func:`withdrawn_message`); a recruited participant's id cannot join again.

Lifecycle (annotation.services.study_state): withdrawal is allowed in every state; a closed
study's rows take the erasure too (the database lets the erasure alone through, migration
0033); an archived study's (its record, as released) do not: its withdrawals exclude, never erase.
Claims are released only while the study runs (elsewhere nobody is given work).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import Case, Count, Exists, OuterRef, Value, When
from django.utils import timezone

from annotation.models import (
    Annotation,
    AuditEvent,
    CorrectionPass,
    GoldItem,
    Membership,
    Participant,
    Study,
    StudyState,
    WindowCorrection,
    Withdrawal,
)
from annotation.prepared import prepared
from annotation.rules import workflow
from annotation.services.annotation_common import NotAllowed, withdrawn_message
from annotation.services.studies import study_audit
from annotation.services.study_state import Write, study_allows, study_require

WAITING = (workflow.ASSIGNED, workflow.IN_PROGRESS, workflow.RETURNED)
# The work that counts had they stayed: the study's work, submitted once (annotation.selectors.counted).
DONE = (workflow.SUBMITTED, workflow.IN_REVIEW, workflow.APPROVED)
ERASED = {"erased": True}
ERASED_COMMENT = "(erased on withdrawal)"
# Called with the study and the erased annotations' ids inside the erasure's transaction, while
# the database lets it through and before the content is cleared (a hook may read the texts it
# must forget): other apps register here (scoring deletes the scores and the shared cache's
# entries derived from the erased texts, scoring.erasure) so that this module does not depend on
# them.
ERASURE_HOOKS: list[Callable[[Study, list[int]], object]] = []


@prepared
def _withdrawal_read(*, study_id: int, user_id: int):
    return Withdrawal.objects.filter(study_id=study_id, user_id=user_id)  # one at most (a constraint)


def withdrawal_of(*, study: Study, user) -> Withdrawal | None:
    if not getattr(user, "is_authenticated", False):
        return None
    found = _withdrawal_read(study_id=study.pk, user_id=user.pk)
    return found[0] if found else None


def withdrawn_work_message(study: Study, at) -> str:
    """The sentence QC gets for an item of someone who withdrew (annotation.services.review)."""
    return (f"The annotator of this item withdrew from study {study.name} on {at:%Y-%m-%d %H:%M} UTC: their work "
            "no longer counts, so QC does not review it.")


def require_not_withdrawn(*, study: Study, user) -> None:
    """NotAllowed, saying so, when the person withdrew from the study."""
    withdrawal = withdrawal_of(study=study, user=user)
    if withdrawal is not None:
        raise NotAllowed(withdrawn_message(study, withdrawal.at))


def _pseudonym(study: Study, user) -> str:
    participant = Participant.objects.filter(study=study, user=user).values_list("pseudonym", flat=True).first()
    return participant or user.get_username()


@transaction.atomic
def participation_withdraw(*, study: Study, user, erase: bool = False) -> Withdrawal:
    """Withdraw `user` from `study` (see the module): recorded once, audited as
    `participant_withdraw` (the person and how many items went back, no content); their claims
    released while the study runs; their annotations' content erased when `erase` or the study's
    setting says so, now or on a later call (a second call otherwise returns the first's record).
    NotAllowed when they are no annotator of the study; StudyStateRefused for an erasure an
    archived study refuses (nothing is written then)."""
    # One at a time per study, as joining is (and with the same lock, which leaves people's saves
    # alone): a double click waits for the first and finds it.
    study = Study.objects.select_for_update(no_key=True).get(pk=study.pk)
    study_require(study, Write.WITHDRAW)
    erase = bool(erase) or study.erase_on_withdrawal
    withdrawal = Withdrawal.objects.filter(study=study, user=user).first()
    if withdrawal is None:
        if not Membership.objects.filter(study=study, user=user, role=Membership.Role.ANNOTATOR).exists():
            raise NotAllowed(f"You do not annotate in study {study.name}: there is nothing to withdraw from.")
        if erase:
            study_require(study, Write.ERASE)  # refused before anything is written
        waiting = Annotation.objects.filter(caption__clip__study=study, annotator=user, state__in=WAITING).exclude(
            purpose=Annotation.Purpose.GOLD)
        released = waiting.count() if study.state == StudyState.RUNNING else 0
        withdrawal = Withdrawal.objects.create(study=study, user=user, pseudonym=_pseudonym(study, user),
                                               released=released, erase_requested=erase)
        study_audit(study=study, actor=user, action="participant_withdraw", before={}, after={
            "person": withdrawal.pseudonym, "released": released, "erase": erase})
    if erase and withdrawal.erased_at is None:
        withdrawal_erase(withdrawal=withdrawal, study=study)
    return withdrawal


def withdrawal_erase(*, withdrawal: Withdrawal, study: Study) -> Withdrawal:
    """Erase the content of the withdrawn person's annotations in the study (not the gold
    verdicts they made as an expert: those belong to the study's gold items), once; audited as
    `participant_erase` with the person and the count only. Run inside the caller's transaction
    (participation_withdraw's, which holds the study's lock)."""
    study_require(study, Write.ERASE)
    if withdrawal.erased_at is not None:
        return withdrawal
    ids = list(Annotation.objects.filter(caption__clip__study=study, annotator_id=withdrawal.user_id)
               .exclude(purpose=Annotation.Purpose.GOLD).values_list("pk", flat=True))
    with transaction.atomic():
        # The database's guards of a closed study and of the audit trail let this through while
        # this transaction holds the row marked erasing (migration 0033), and only then.
        Withdrawal.objects.filter(pk=withdrawal.pk).update(erasing=True)
        for hook in ERASURE_HOOKS:
            hook(study, ids)
        WindowCorrection.objects.filter(correction_pass__annotation_id__in=ids).delete()
        CorrectionPass.objects.filter(annotation_id__in=ids).update(
            overview_verdict="", overview_text="", overview_modes=[], segmentation_verdict="",
            segmentation_modes=[], corrected_windows=[])
        Annotation.objects.filter(pk__in=ids).update(
            return_comment=Case(When(state=workflow.RETURNED, then=Value(ERASED_COMMENT)), default=Value("")),
            returned_units=[], telemetry={}, ui_state={}, undo={}, undo_until=None)
        AuditEvent.objects.filter(annotation_id__in=ids).update(before=ERASED, after=ERASED)
        now = timezone.now()
        Withdrawal.objects.filter(pk=withdrawal.pk).update(erasing=False, erase_requested=True, erased_at=now,
                                                           erased=len(ids))
    withdrawal.refresh_from_db()
    study_audit(study=study, actor=withdrawal.user, action="participant_erase", before={},
                after={"person": withdrawal.pseudonym, "annotations": len(ids)})
    return withdrawal


@dataclass(frozen=True)
class WithdrawalRow:
    pseudonym: str
    at: datetime
    released: int
    excluded: int
    erase_requested: bool
    erased_at: datetime | None
    erased: int


def withdrawals_list(*, study: Study) -> list[WithdrawalRow]:
    """The study's withdrawals by time, each with how many of the person's annotations are
    excluded (their work submitted once, on captions that are not gold items) (two queries)."""
    rows = list(Withdrawal.objects.filter(study=study))
    excluded = dict(
        Annotation.objects.filter(caption__clip__study=study, annotator_id__in=[w.user_id for w in rows],
                                  purpose=Annotation.Purpose.WORK, state__in=DONE)
        .exclude(Exists(GoldItem.objects.filter(caption_id=OuterRef("caption_id"))))
        .order_by().values("annotator_id").annotate(n=Count("pk")).values_list("annotator_id", "n"))
    return [WithdrawalRow(w.pseudonym, w.at, w.released, excluded.get(w.user_id, 0), w.erase_requested,
                          w.erased_at, w.erased) for w in rows]


def may_withdraw(study: Study, user) -> bool:
    """Whether the person may withdraw now: an annotator of the study that allows it."""
    return study_allows(study, Write.WITHDRAW) and Membership.objects.filter(
        study=study, user=user, role=Membership.Role.ANNOTATOR).exists()


def may_erase(study: Study) -> bool:
    """Whether the study's state allows erasing (all but an archived study)."""
    return study_allows(study, Write.ERASE)
