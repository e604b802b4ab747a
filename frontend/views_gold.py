"""The gold page of a study (study admins and gold experts): make gold items, choose the
practice set and its pass rule, set the gold rate, see the pool, the annotators' practice
results and the drift warnings (the rule of the running study's dashboard:
annotation.selectors.annotator_quality.gold_drift, so both pages name the same people).
A plain form page; its writes are
annotation.services.gold's, as the API's are (annotation.api.gold)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from annotation.errors import FieldErrors, ServiceError
from annotation.models import Caption, Study
from annotation.permissions import Role, user_roles
from annotation.rules import study_settings
from annotation.rules.gold_agreement import MIN_ITEMS, RECENT_CHECKS
from annotation.selectors.annotator_quality import gold_drift
from annotation.selectors.work_log import people_of
from annotation.services import gold

NUMBERS = {
    "practice_min_items": int,
    "practice_min_overview_agreement": float,
    "practice_min_mode_f1": float,
    "practice_min_window_agreement": float,
    "gold_rate": float,
    "gold_drift_threshold": float,
}


def _settings_from(post) -> tuple[dict, dict]:
    values, errors = {"requires_qualification": post.get("requires_qualification") == "on"}, {}
    for field, kind in NUMBERS.items():
        raw = post.get(field, "").strip()
        try:
            values[field] = kind(raw)
        except ValueError:
            errors[field] = f"Give a number, not {raw[:20]!r}."
    return values, errors


def _practice_items(post) -> list[int] | None:
    try:
        return [int(value) for value in post.getlist("practice_item")]
    except ValueError:
        return None


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def gold_page(request, slug: str):
    study = get_object_or_404(Study, slug=slug)
    roles = user_roles(request.user, study)
    if not roles:
        raise Http404("No such study.")
    if not roles & {Role.ADMIN, Role.EXPERT}:
        raise PermissionDenied("Only the study's admins and gold experts see its gold items.")
    is_admin = Role.ADMIN in roles
    errors: dict[str, str] = {}
    refused = ""
    status = 200
    if request.method == "POST":
        action = request.POST.get("action")
        try:
            if action == "make":
                caption = Caption.objects.filter(
                    clip__study=study,
                    clip__name=request.POST.get("clip", "").strip(),
                    model__alias=request.POST.get("model", "").strip(),
                ).first()
                if caption is None:
                    raise FieldErrors({"caption": "No caption of that clip by that model alias in this study."})
                item = gold.gold_start(study=study, actor=request.user, caption_id=caption.pk)
                return redirect("workspace", annotation_id=item.gold_id)
            if not is_admin:
                raise PermissionDenied("Only the study's admins change the practice set and qualification.")
            if action == "practice":
                values, problems = _settings_from(request.POST)
                items = _practice_items(request.POST)
                if items is None:
                    problems["practice_items"] = "Choose practice items from the list."
                if problems:
                    raise FieldErrors(problems)
                gold.practice_configure(study=study, actor=request.user, practice_items=items, settings=values)
                return redirect("study-gold", slug=study.slug)
            if action == "retry":
                user = get_object_or_404(
                    get_user_model(),
                    username=request.POST.get("username", ""),
                    memberships__study=study,
                    memberships__role=Role.ANNOTATOR,
                )
                gold.qualification_retry_allow(study=study, actor=request.user, user=user)
                return redirect("study-gold", slug=study.slug)
            raise ServiceError("Unknown action.")
        except FieldErrors as exc:
            errors, status = exc.errors, 400
        except ServiceError as exc:
            refused, status = str(exc), 400
    state = gold.practice_state(study)
    context = {
        "study": study,
        "tab": "gold",
        "is_admin": is_admin,
        "state": state,
        "errors": errors,
        "refused": refused,
        "meanings": {field: study_settings.MEANINGS[field] for field in study_settings.GOLD_FIELDS},
        "values": request.POST if status == 400 and request.POST.get("action") == "practice" else state["settings"],
        "qualifications": gold.qualifications(study) if is_admin else [],
        "drift": gold_drift(study=study, people=people_of(study, by_name=True)) if is_admin else [],
        "drift_minimum": MIN_ITEMS,
        "drift_window": RECENT_CHECKS,
    }
    return render(request, "frontend/study_gold.html", context, status=status)
