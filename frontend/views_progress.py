"""The progress page of a study, for its admins."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_safe

from annotation.models import Study
from annotation.permissions import Role, user_roles
from annotation.progress import study_progress


@login_required
@require_safe
def progress(request, slug: str):
    study = get_object_or_404(Study.objects.select_related("taxonomy"), slug=slug)
    if Role.ADMIN not in user_roles(request.user, study):
        # 404 rather than 403: people outside the study's admins learn nothing about it.
        raise Http404("No such study.")
    return render(
        request, "frontend/progress.html", {"study": study, "progress": study_progress(study=study)}
    )
