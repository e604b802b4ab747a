"""Pages of the QC reviewer: the review queue of a study, and the review of one annotation.

The pages are shells: the queue and the review data come from the workflow API,
which the page scripts call (and which decides every action). Model identity
stays hidden here: reviewers review blind, so even an admin sees only the alias.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import OuterRef
from django.http import Http404
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_safe

from annotation.api.workflow import workspace_payload, workspace_read
from annotation.models import Annotation, Membership
from annotation.permissions import Role, remember_roles, require_study_work, user_roles
from annotation.prepared import prepared
from annotation.selectors.queues import REVIEW_ORDERS
from annotation.selectors.work_gate import consent_columns, consent_read_with
from frontend.views import _member_study
from frontend.views_consent import consent_gate
from frontend.views_guidelines import guidelines_context

REVIEW_ROLES = {Role.REVIEWER, Role.ADMIN}


@login_required
@ensure_csrf_cookie
@require_safe
def review_queue(request, slug: str):
    study = _member_study(request, slug)
    roles = user_roles(request.user, study)
    if not roles & REVIEW_ROLES:
        raise PermissionDenied("Only QC reviewers and study admins see the review queue.")
    require_study_work(request.user, study)
    gate = consent_gate(request, study)
    if gate is not None:
        return gate
    annotators = (
        Membership.objects.filter(study=study, role=Role.ANNOTATOR)
        .order_by("user__username")
        .values_list("user__username", flat=True)
    )
    config = {
        "study": study.slug,
        "queue_url": f"/api/studies/{study.slug}/review-queue/",
        "me": request.user.username,
        "can_review": Role.REVIEWER in roles,
        "next_api": f"/api/studies/{study.slug}/review-queue/next/",
        "models": list(study.candidate_models.order_by("alias").values_list("alias", flat=True)),
        "annotators": list(annotators),
    }
    return render(request, "frontend/review_queue.html", {"study": study, "config": config})


@prepared
def _review_page_read(*, annotation_id: int, user_id: int):
    """The annotation as the workspace's API reads it (its relations, its passes and the viewer's
    roles), with the study's consent as the viewer stands with it, in one statement."""
    return workspace_read.queryset(annotation_id=annotation_id, user_id=user_id).annotate(
        **consent_columns(study=OuterRef("caption__clip__study_id"), user_id=user_id))


@login_required
@ensure_csrf_cookie
@require_safe
def review(request, annotation_id: int):
    try:
        annotation = _review_page_read.one(annotation_id=annotation_id, user_id=request.user.pk)
    except Annotation.DoesNotExist:
        raise Http404("No such annotation.") from None
    study = annotation.caption.clip.study
    remember_roles(request.user, study, annotation)
    roles = user_roles(request.user, study)
    if not roles:
        raise Http404("No such annotation.")
    if not roles & REVIEW_ROLES:
        raise PermissionDenied("Only QC reviewers and study admins review annotations.")
    require_study_work(request.user, study)
    gate = consent_gate(request, study, consent=consent_read_with(annotation))
    if gate is not None:
        return gate
    payload = workspace_payload(annotation, request.user)
    alias = annotation.caption.model.alias
    payload["caption"]["model"] = alias
    config = {
        "id": annotation.pk,
        "study": study.slug,
        "me": request.user.username,
        "model_alias": alias,
        "can_review": Role.REVIEWER in roles and annotation.annotator_id != request.user.pk,
        "reviewer": Role.REVIEWER in roles,
        "clip": annotation.caption.clip.name,
        # Next claims in the order the reviewer chose in the queue (the queue passes it on).
        "order": order if (order := request.GET.get("order")) in REVIEW_ORDERS else "risk",
        "queue_url": f"/studies/{study.slug}/review/",
        "next_api": f"/api/studies/{study.slug}/review-queue/next/",
        "api": f"/api/annotations/{annotation.pk}/",
    }
    return render(
        request,
        "frontend/review.html",
        {
            "study": study,
            "annotation": annotation,
            "clip": annotation.caption.clip,
            "model_alias": alias,
            "config": config,
            "payload": payload,
            "guidelines": guidelines_context(study, request.user),
        },
    )
