"""The data release download of the study page (study admins and researchers): a zip built
within the request. The release holds final verdicts only, a few kilobytes a caption."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.views.decorators.http import require_safe

from annotation.permissions import Role, require_model_identity, user_roles
from frontend.views import _member_study
from scoring.release import ReleaseError, release_zip


@login_required
@require_safe
def study_release(request, slug: str):
    study = _member_study(request, slug)
    if not user_roles(request.user, study) & {Role.ADMIN, Role.RESEARCHER}:
        raise PermissionDenied("Only study admins and researchers download the data release.")
    models = request.GET.get("models", "alias")
    if models != "alias":
        require_model_identity(request.user, study)  # a release by model name, for who may see names
    try:
        data = release_zip(study=study, license=request.GET.get("license", "CC-BY-4.0"), models=models)
    except ReleaseError as refusal:
        return HttpResponse(str(refusal), status=400, content_type="text/plain; charset=utf-8")
    response = HttpResponse(data, content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-release.zip"'
    return response
