"""What decides whether a person may start work in a study (annotation.services.consent.
work_start_require): their withdrawal, the study's current consent version and whether they
accepted it, and whether their time allowed as a participant ran out, as columns of a read."""

from __future__ import annotations

from django.db.models import Exists, OuterRef, Subquery

from annotation.models import ConsentRecord, ConsentVersion, Withdrawal
from annotation.selectors.counted import timed_out_participation

# The columns consent_columns and work_gate_columns give, by these names.
CONSENT = ("consent_number", "consent_text", "consent_given")
WORK_GATE = ("withdrawn_at", *CONSENT, "timed_out_at")


def consent_columns(*, study: OuterRef, user_id: int) -> dict:
    """The study's current consent version (its number and text) and whether the person
    `user_id` accepted it, as annotations of a read whose `study` (a reference to its study id)
    is the study; in this order (consent_given reads consent_number)."""
    versions = ConsentVersion.objects.filter(study_id=study).order_by("-number")
    return {
        "consent_number": Subquery(versions.values("number")[:1]),
        "consent_text": Subquery(versions.values("text")[:1]),
        "consent_given": Exists(ConsentRecord.objects.filter(study_id=study, user_id=user_id,
                                                             number=OuterRef("consent_number"))),
    }


def work_gate_columns(*, study: OuterRef, user_id: int) -> dict:
    """The gate of the person `user_id` in the study, as consent_columns gives its part."""
    return {
        "withdrawn_at": Subquery(Withdrawal.objects.filter(study_id=study, user_id=user_id)
                                 .order_by().values("at")[:1]),
        **consent_columns(study=study, user_id=user_id),
        "timed_out_at": Subquery(timed_out_participation(study=study, user=user_id).values("time_out_at")[:1]),
    }


def consent_owed(*, number: int | None, text: str | None, given: bool) -> bool:
    """The one rule of who must accept the study's consent before they work: the study has a
    current version (`number`) with a text, and the person has not accepted it (`given`)."""
    return number is not None and bool((text or "").strip()) and not given


def consent_due_number(columns) -> int | None:
    """The consent version the person must accept before they work, from consent_columns'
    values (a mapping): None when the study asks for none or they accepted its current one."""
    owed = consent_owed(number=columns["consent_number"], text=columns["consent_text"],
                        given=columns["consent_given"])
    return columns["consent_number"] if owed else None


def consent_read_with(row) -> dict:
    """consent_columns' values on `row`, a read annotated with them (for consent_due_number)."""
    return {name: getattr(row, name) for name in CONSENT}


def remember_work_gate(study, user, row) -> None:
    """Keep on `study` the gate of `user` that `row` was read with (work_gate_columns), for the
    request's work_start_require (taken_work_gate)."""
    study.work_gate_read = (user.pk, {name: getattr(row, name) for name in WORK_GATE})


def taken_work_gate(study, user) -> dict | None:
    """The person's gate to starting work read with the study in this request
    (remember_work_gate), or None; taken once, so that a later check reads it again."""
    known = study.__dict__.pop("work_gate_read", None)
    return known[1] if known is not None and known[0] == user.pk else None
