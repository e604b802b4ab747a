"""The progress page of a study, for its admins; its other members are told who may see it (403)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_safe

from annotation.models import Study
from annotation.permissions import Role, sees_model_identity, user_roles
from annotation.selectors.progress import agreement_on_double_annotations, study_progress
from frontend.templatetags.progress_format import decimal


def _study_for_admin(request, slug: str) -> Study:
    study = get_object_or_404(Study.objects.select_related("taxonomy"), slug=slug)
    roles = user_roles(request.user, study)
    if not roles:
        # 404 rather than 403: people outside the study learn nothing about it.
        raise Http404("No such study.")
    if Role.ADMIN not in roles:
        raise PermissionDenied(
            "Only the study's admins see its progress (who annotated and reviewed what, and how fast). "
            "Ask one of them if you need these numbers."
        )
    return study


@login_required
@require_safe
def progress(request, slug: str):
    """The page: counts, throughput and times at once; its agreement table asks
    `progress_agreement` (computing it reads every unit of every double-annotated caption)."""
    study = _study_for_admin(request, slug)
    return render(
        request,
        "frontend/progress.html",
        # An admin who also annotates or reviews sees the models by alias only.
        {"study": study, "progress": study_progress(study=study, with_agreement=False,
                                                    names=sees_model_identity(request.user, study))},
    )


@login_required
@require_safe
def progress_agreement(request, slug: str):
    """The agreement table of the progress page, as JSON, numbers formatted as on the page."""
    study = _study_for_admin(request, slug)
    rows, double = agreement_on_double_annotations(study=study)
    return JsonResponse({
        "double_annotated": double,
        "rows": [
            {"label": row.label, "kappa": decimal(row.result.kappa, 3),
             "alpha": decimal(row.result.alpha, 3), "items": row.result.items}
            for row in rows
        ],
    })
