"""What decides whether a person may start work in a study (annotation.services.consent.
work_start_require): their withdrawal, the study's current consent version and whether they
accepted it, and whether their time allowed as a participant ran out, as columns of a read."""

from __future__ import annotations

from django.db.models import Exists, OuterRef, Subquery

from annotation.models import ConsentRecord, ConsentVersion, Withdrawal
from annotation.selectors.counted import timed_out_participation

# The columns work_gate_columns gives, by these names.
WORK_GATE = ("withdrawn_at", "consent_number", "consent_text", "consent_given", "timed_out_at")


def work_gate_columns(*, study: OuterRef, user_id: int) -> dict:
    """The gate of the person `user_id` in the study `study` (a reference to the outer read's
    study id), as annotations for that read, in this order (consent_given reads consent_number)."""
    versions = ConsentVersion.objects.filter(study_id=study).order_by("-number")
    return {
        "withdrawn_at": Subquery(Withdrawal.objects.filter(study_id=study, user_id=user_id)
                                 .order_by().values("at")[:1]),
        "consent_number": Subquery(versions.values("number")[:1]),
        "consent_text": Subquery(versions.values("text")[:1]),
        "consent_given": Exists(ConsentRecord.objects.filter(study_id=study, user_id=user_id,
                                                             number=OuterRef("consent_number"))),
        "timed_out_at": Subquery(timed_out_participation(study=study, user=user_id).values("time_out_at")[:1]),
    }
