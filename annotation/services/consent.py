"""A study's consent: the text its admins write, and who accepted which version of it.

- **Writing** (:func:`consent_save`, a settings-like write: closed and archived studies refuse
  it, and the database refuses it too, migration 0032). While the study is in setup an edit
  replaces the one draft; once it runs, each edit that changes the text is a new version,
  numbered on. Audited as ``consent_update`` with the version, the text's SHA-256 and size. An
  empty text asks for no consent.
- **Accepting** (:func:`consent_accept`): a person records that they accepted the current
  version (the number, the time, the person). Crowd participants accept on the recruitment
  link's page, as they join (annotation.services.recruitment.participant_join); invited members
  on the study's consent page or through the API.
- **The gate** (:func:`work_start_require`, with the withdrawal in the same read): while the study
  asks for consent, nobody starts work
  (opens an item, takes the next one, claims a review) without having accepted its *current*
  version. A version published while the study runs is asked for before the next item; work on
  an item already open may still be saved and submitted. Study admins who only administer are
  not asked: the gate is on the work.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef

from annotation.errors import FieldErrors
from annotation.models import (
    AuditEvent,
    ConsentRecord,
    ConsentVersion,
    Study,
    StudyState,
)
from annotation.prepared import prepared
from annotation.rules import consent as consent_rules
from annotation.rules import guidelines as text_rules
from annotation.selectors.work_gate import (
    WORK_GATE,
    consent_due_number,
    consent_owed,
    taken_work_gate,
    work_gate_columns,
)
from annotation.services.annotation_common import NotAllowed, timed_out_message, withdrawn_message
from annotation.services.study_state import Write, study_require


class ConsentNeeded(NotAllowed):
    """The person has not accepted the study's current consent version: no work starts."""

    def __init__(self, study: Study, number: int):
        super().__init__(
            f"Study {study.name} asks you to read and accept its consent (version {number}) before "
            f"you start work: open /studies/{study.slug}/consent/ (or POST the version to "
            f"/api/studies/{study.slug}/consent/accept/).")
        self.version = number


def consent_current(study: Study) -> ConsentVersion | None:
    """The study's newest consent version (possibly empty), or None before any was written."""
    return ConsentVersion.objects.filter(study=study).order_by("-number").first()


def consent_asked(study: Study) -> ConsentVersion | None:
    """The version people must accept: the newest, when its text is not empty; else None."""
    current = consent_current(study)
    return current if current is not None and current.text.strip() else None


def consent_summary(version: ConsentVersion | None) -> dict[str, Any]:
    """What the audit trail keeps of a version."""
    if version is None:
        return {}
    data = version.text.encode("utf-8")
    return {"version": version.number, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}


@transaction.atomic
def consent_save(*, study: Study, actor, text: Any) -> tuple[ConsentVersion, bool]:
    """Store the study's consent text: (the version now current, whether a new version was made).

    Refused with FieldErrors naming `text` (not text, over TEXT_MAX_BYTES), nothing stored; an
    unchanged text stores nothing."""
    study = Study.objects.select_for_update().get(pk=study.pk)
    study_require(study, Write.SETTINGS)
    problem = consent_rules.text_problem(text)
    if problem:
        raise FieldErrors({"text": problem})
    current = consent_current(study)
    if current is not None and current.text == text:
        return current, False
    before = consent_summary(current)
    if current is not None and study.state == StudyState.SETUP:
        current.text = text
        current.save(update_fields=["text", "updated_at"])
        version, created = current, False
    else:
        version = ConsentVersion.objects.create(
            study=study, number=(current.number + 1) if current else 1, text=text, created_by=actor)
        created = True
    AuditEvent.objects.create(study=study, actor=actor, action="consent_update", before=before,
                              after={**consent_summary(version), "draft_replaced": not created})
    return version, created


def consent_view(version: ConsentVersion) -> dict[str, Any]:
    """A version for pages and the API: its Markdown and its sanitised HTML."""
    return {
        "version": version.number,
        "text": version.text,
        "html": text_rules.render(version.text),
        "created_by": version.created_by.get_username() if version.created_by_id else None,
        "created_at": version.created_at,
        "updated_at": version.updated_at,
    }


def consent_of(study: Study, user) -> ConsentRecord | None:
    """The newest version `user` accepted in the study, or None."""
    if not getattr(user, "is_authenticated", False):
        return None
    return ConsentRecord.objects.filter(study=study, user=user).order_by("-number").first()


@prepared
def _current_consent_read(*, study_id: int, user_id: int):
    """The study's current consent version, and whether the person accepted it."""
    return ConsentVersion.objects.filter(study_id=study_id).order_by("-number").annotate(
        accepted=Exists(ConsentRecord.objects.filter(study_id=OuterRef("study_id"), user_id=user_id,
                                                     number=OuterRef("number"))))[:1]


def consent_due(study: Study, user) -> ConsentVersion | None:
    """The consent version `user` must accept before they start work, or None (the study asks
    for none, or they accepted the current one)."""
    newest = _current_consent_read(study_id=study.pk, user_id=user.pk)
    current = newest[0] if newest else None
    if current is None or not consent_owed(number=current.number, text=current.text, given=current.accepted):
        return None
    return current


def consent_require(study: Study, user) -> None:
    """ConsentNeeded when `user` has not accepted the study's current consent version."""
    due = consent_due(study, user)
    if due is not None:
        raise ConsentNeeded(study, due.number)


@prepared
def _work_gate(*, study_id: int, user_id: int):
    """What work_start_require needs, in one read (annotation.selectors.work_gate)."""
    return Study.objects.filter(pk=study_id).annotate(
        **work_gate_columns(study=OuterRef("pk"), user_id=user_id)).values(*WORK_GATE)


def work_start_require(study: Study, user, *, withdrawal_counts: bool = True) -> None:
    """Refuse to start work (NotAllowed) to someone who withdrew from the study or is a
    participant whose time allowed ran out before they completed (annotation.services.
    recruitment) (unless `withdrawal_counts` is False: a gold verdict), then ConsentNeeded to someone who has not
    accepted its current consent version. One read, however many versions and people: it is on
    every "start next" and every opened item. A request whose study was read with this person's
    gate (annotation.api.workflow.IsStudyMemberStartingWork, for "start next" and the review
    queue's next) uses that read, once."""
    gate = taken_work_gate(study, user) or _work_gate.one(study_id=study.pk, user_id=user.pk)
    if withdrawal_counts and gate["withdrawn_at"] is not None:
        raise NotAllowed(withdrawn_message(study, gate["withdrawn_at"]))
    if withdrawal_counts and gate["timed_out_at"] is not None:
        raise NotAllowed(timed_out_message(gate["timed_out_at"]))
    due = consent_due_number(gate)
    if due is not None:
        raise ConsentNeeded(study, due)


def consent_record(*, study: Study, user, version: Any) -> ConsentRecord:
    """Record that `user` accepted `version` of the study's consent, which must be the current
    one (FieldErrors naming `version` otherwise: the text changed since it was shown). Accepting
    again is harmless. The caller checks the study's state (a join, or Write.WORK)."""
    asked = consent_asked(study)
    if asked is None:
        raise FieldErrors({"version": f"Study {study.name} asks for no consent."})
    if isinstance(version, bool) or not isinstance(version, int) or version != asked.number:
        raise FieldErrors({"version": f"The consent text is now version {asked.number}: read it and accept "
                                      "that version."})
    try:
        with transaction.atomic():
            return ConsentRecord.objects.create(study=study, user=user, number=version)
    except IntegrityError:  # accepted already (another tab)
        return ConsentRecord.objects.get(study=study, user=user, number=version)


@transaction.atomic
def consent_accept(*, study: Study, user, version: Any) -> ConsentRecord:
    """An invited member accepts the current consent version, while the study runs (in setup the
    text is a draft that may still change, and nobody works)."""
    study_require(study, Write.WORK)
    return consent_record(study=study, user=user, version=version)
