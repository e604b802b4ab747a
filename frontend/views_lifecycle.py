"""The study page's lifecycle parts: the setup checklist (each readiness item with a link to the
place that fixes it), the admin's dashboard while the study runs, the start / close / archive
buttons and the data release form. Views call this; the moves go through the REST API."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from annotation.models import Study, StudyState
from annotation.selectors.annotator_quality import gold_drift
from annotation.selectors.dashboard import study_dashboard
from annotation.selectors.work_log import people_of
from annotation.services.gold import gold_pool_status
from annotation.services.lifecycle import UNFINISHED_LABELS, lifecycle_status
from scoring.lifecycle import verdicts_not_scored
from scoring.release import LICENSES

# Where each readiness item is fixed: an anchor of the study page (or another page).
FIX_LINKS = {
    "clips": "#imports",
    "captions": "#imports",
    "members_admin": "#members",
    "members_annotator": "#members",
    "members_reviewer": "#members",
    "members_researcher": "#members",
    "assignment": "#assign-form",
    "unassigned": "#assign-form",
}


def idle_minutes_from(request) -> int:
    try:
        minutes = int(request.GET.get("idle_minutes", ""))
    except ValueError:
        return settings.IDLE_MINUTES
    return minutes if 1 <= minutes <= 60 * 24 * 30 else settings.IDLE_MINUTES


def lifecycle_context(request, study: Study, *, roles: set[str]) -> dict[str, Any]:
    """What the study page shows of the lifecycle to this person (admins see the checklist, the
    dashboard and the buttons; admins and researchers the release form)."""
    is_admin = "admin" in roles
    context: dict[str, Any] = {
        "can_release": bool(roles & {"admin", "researcher"}),
        "release_licenses": LICENSES,
    }
    if not is_admin:
        return context
    status = lifecycle_status(study)
    checklist = [{**item, "link": FIX_LINKS.get(item["key"], "")} for item in status.get("readiness", [])]
    unfinished = [
        {"key": key, "label": UNFINISHED_LABELS.get(key, key), "count": n}
        for key, n in status.get("unfinished", {}).items()
    ]
    context.update(lifecycle=status, checklist=checklist, unfinished=unfinished,
                   lifecycle_data={"study": study.slug, "state": study.state, "next": status["next"],
                                   "labels": UNFINISHED_LABELS})
    if study.state == StudyState.RUNNING:
        context["dashboard"] = study_dashboard(study, idle_minutes=idle_minutes_from(request))
        context["dashboard"]["unscored"] = verdicts_not_scored(study)
        # Annotators whose recent gold accuracy fell below the study's drift threshold, by name.
        context["dashboard"]["gold_drift"] = gold_drift(study=study, people=people_of(study, by_name=True))
        context["dashboard"]["gold_drift_threshold"] = study.gold_drift_threshold
        if study.gold_rate > 0:  # hidden gold checks: whether the pool still serves them
            context["dashboard"]["gold"] = {"pool": gold_pool_status(study)}
    return context
