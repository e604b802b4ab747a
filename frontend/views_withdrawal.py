"""The withdrawal page of an annotator (invited or recruited): what withdrawing means, a form to
confirm it (with "also erase my annotations"), and, once withdrawn, what was done.

A POST needs the confirmation box ticked (the confirm step); withdrawing is idempotent
(annotation.services.withdrawal), so a hurried double click withdraws once and both answers
lead back to this page (post, redirect, get)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from annotation.errors import StudyStateRefused
from annotation.models import Study
from annotation.permissions import is_member
from annotation.services import withdrawal as service
from annotation.services.annotation_common import NotAllowed, withdrawn_message

CONFIRM_MISSING = "Tick the box to confirm that you want to withdraw: nothing was changed."


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def withdraw_page(request, slug: str):
    study = get_object_or_404(Study, slug=slug)
    if not is_member(request.user, study):
        raise Http404("No such study.")
    error, status = "", 200
    if request.method == "POST":
        if request.POST.get("confirm") != "yes":
            error, status = CONFIRM_MISSING, 400
        else:
            try:
                service.participation_withdraw(study=study, user=request.user, erase=request.POST.get("erase") == "yes")
            except NotAllowed as exc:
                error, status = str(exc), 403
            except StudyStateRefused as refusal:
                error, status = str(refusal), 409
            else:
                return redirect("withdraw", slug=study.slug)
    withdrawal = service.withdrawal_of(study=study, user=request.user)
    return render(request, "frontend/withdraw.html", {
        "study": study, "withdrawal": withdrawal, "error": error,
        "withdrawn_message": withdrawn_message(study, withdrawal.at) if withdrawal else "",
        "may_withdraw": withdrawal is None and service.may_withdraw(study, request.user),
        "may_erase": withdrawal is not None and withdrawal.erased_at is None and service.may_erase(study),
    }, status=status)
