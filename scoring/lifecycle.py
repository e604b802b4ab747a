"""What the scoring app does for a study's lifecycle (annotation.services.lifecycle): it builds
the final profile when a study closes, and counts the final verdicts not yet scored."""

from __future__ import annotations

from django.db.models import Max

from annotation.models import Annotation, Study
from annotation.rules import workflow
from annotation.selectors.counted import counted_annotations
from scoring.models import ScoreResult


def verdicts_not_scored(study: Study) -> int:
    """Final verdicts newer than the study's newest stored score (all of them when nothing was
    scored): what a scoring job has not seen yet. Two queries, each an aggregate in the
    database (the newest score is read from the index on study and time)."""
    newest = ScoreResult.objects.filter(study=study).aggregate(newest=Max("computed_at"))["newest"]
    approved = counted_annotations(Annotation.objects.filter(caption__clip__study=study, state=workflow.APPROVED))
    if newest is not None:
        approved = approved.filter(reviewed_at__gt=newest)
    return approved.count()


def unscored_counter(study: Study) -> dict[str, int]:
    return {"unscored": verdicts_not_scored(study)}


def final_profile_start(study_id: int, requested_by: str) -> None:
    """Export the profile of a study that just closed; the job's files are kept as its final
    profile (marked ``final`` in the job's status)."""
    from scoring.profile_jobs import profile_job_create

    study = Study.objects.get(pk=study_id)
    profile_job_create(study=study, requested_by=requested_by, final=True)
