"""The Payments page of a study (its admins only: the page shows the participants' platform
ids): the payment report (annotation.services.payments), a rate to price the bonuses at, and
the downloads, which are the API's (the report's CSV, the bulk-bonus file). Members without
the admin role are told who may see it (403); people outside the study learn nothing (404). Each
showing is recorded in the study's history (annotation.services.payments.payment_report_read)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_safe

from annotation.models import Study
from annotation.permissions import Role, user_roles
from annotation.rules.payments import RATE_MAX, RateProblem, parse_rate
from annotation.services.payments import READ_PAGE, UNKNOWN, bonus_of, payment_report_read
from frontend.templatetags.progress_format import percent, seconds


@login_required
@require_safe
def payments_page(request, slug: str):
    study = get_object_or_404(Study, slug=slug)
    roles = user_roles(request.user, study)
    if not roles:
        raise Http404("No such study.")
    if Role.ADMIN not in roles:
        raise PermissionDenied("Only the study's admins see its payments.")
    report = payment_report_read(study=study, actor=request.user, read=READ_PAGE)
    rate_text = request.GET.get("rate", "").strip()
    bonus, error = None, ""
    if "rate" in request.GET:
        try:
            bonus = bonus_of(report.rows, parse_rate(rate_text))
        except RateProblem as exc:
            error = str(exc)
    amounts = {line.pseudonym: f"{line.amount:.2f}" for line in bonus.lines} if bonus else {}
    rows = [
        {"pseudonym": row.pseudonym, "participant_id": row.participant_id or UNKNOWN,
         "known": row.participant_id is not None, "done": row.items_done, "assigned": row.items_assigned,
         "active": seconds(row.active_seconds), "active_seconds": row.active_seconds, "joined_at": row.joined_at,
         "completed_at": row.completed_at, "state": row.state, "state_at": row.state_at,
         "completion": seconds(row.completion_seconds) if row.completion_seconds is not None else "",
         "gold": percent(row.gold_accuracy) if report.has_gold else "",
         "gold_checks": row.gold_checks, "amount": amounts.get(row.pseudonym, "")}
        for row in report.rows
    ]
    return render(request, "frontend/study_payments.html", {
        "study": study, "rows": rows, "has_gold": report.has_gold, "rate": rate_text, "error": error,
        "bonus": bonus, "rate_max": RATE_MAX,
        "unknown": sum(1 for row in report.rows if row.participant_id is None),
    }, status=400 if error else 200)
