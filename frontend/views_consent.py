"""The study's consent page for its invited members (annotators, QC reviewers): the current
consent text with Accept and Decline, before their first work and again after a new version is
published while the study runs. The queue, workspace and review pages send a member who has not
accepted the current version here (:func:`consent_gate`); the work API refuses them too
(annotation.services.consent.consent_require), so the page is not the only guard.

Declining stores nothing: the member simply cannot start work until they accept."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme, urlencode
from django.views.decorators.http import require_http_methods

from annotation.errors import ServiceError, StudyStateRefused
from annotation.models import Study, StudyState
from annotation.permissions import Role, is_member, user_roles
from annotation.selectors.work_gate import consent_due_number
from annotation.services import consent as service

WORK_ROLES = {Role.ANNOTATOR, Role.REVIEWER}


def consent_gate(request, study: Study, *, consent: Mapping[str, Any] | None = None):
    """A redirect to the study's consent page when the signed-in person works in the running
    study (annotator or QC reviewer) and has not accepted its current consent version; else None.
    `consent`: that version and whether they accepted it, when the page read it already
    (annotation.selectors.work_gate.consent_columns)."""
    if study.state != StudyState.RUNNING or not user_roles(request.user, study) & WORK_ROLES:
        return None
    if consent is not None:
        due = consent_due_number(consent) is not None
    else:
        due = service.consent_due(study, request.user) is not None
    if not due:
        return None
    return redirect(f"{reverse('study-consent', args=[study.slug])}?{urlencode({'next': request.path})}")


def _next(request, study: Study) -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()},
                                                  require_https=request.is_secure()):
        return target
    return reverse("annotator-queue", args=[study.slug])


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def study_consent(request, slug: str):
    study = get_object_or_404(Study, slug=slug)
    if not is_member(request.user, study):
        raise Http404("No such study.")
    asked = service.consent_asked(study)
    mine = service.consent_of(study, request.user)
    context = {"study": study, "next": _next(request, study), "mine": mine,
               "consent": service.consent_view(asked) if asked else None,
               "due": asked is not None and (mine is None or mine.number != asked.number)}
    if request.method != "POST":
        return render(request, "frontend/study_consent.html", context)
    answer = request.POST.get("answer", "")
    if answer == "decline":
        return render(request, "frontend/study_consent.html", {**context, "declined": True})
    if answer != "accept":
        return render(request, "frontend/study_consent.html",
                      {**context, "refused": "Choose whether you accept or decline."}, status=400)
    version = request.POST.get("version", "")
    try:
        service.consent_accept(study=study, user=request.user, version=int(version) if version.isdigit() else None)
    except StudyStateRefused as refusal:
        return render(request, "frontend/study_consent.html", {**context, "refused": str(refusal)}, status=409)
    except ServiceError as refusal:
        return render(request, "frontend/study_consent.html", {**context, "refused": str(refusal)}, status=400)
    return redirect(context["next"])
