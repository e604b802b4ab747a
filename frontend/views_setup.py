"""Setting a study up: the New study page, its settings, members and invitations, its history,
and the page that accepts an invitation. The pages' scripts call the REST API
(annotation.api.studies); the invitation page is a plain form (the person may have no account)."""

from __future__ import annotations

from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_safe

from annotation.api.studies import history_of
from annotation.errors import FieldErrors, ServiceError
from annotation.models import AssignmentDesign, CaptionLanguage, Study, TaxonomyVersion
from annotation.permissions import Role, is_site_reader, may_create_studies, user_roles
from annotation.rules import study_settings
from annotation.rules.recruitment import TIME_ALLOWED_MAX
from annotation.services import members
from annotation.services.taxonomy import taxonomy_modes
from annotation.services.withdrawal import withdrawals_list
from config.auth import BACKEND


def _taxonomies() -> list[dict]:
    return [
        {"id": t.pk, "label": f"{t.name} v{t.version}", "description": t.description, "frozen": t.is_frozen,
         "modes": [dict(mode) for mode in taxonomy_modes(t)]}
        for t in TaxonomyVersion.objects.all()
    ]


def _form_data(study: Study | None, *, read_only: bool) -> dict:
    """What the settings form's script needs: the choices, the limits and the study's values."""
    from annotation.models import DEFAULT_LENGTH_BAND, DEFAULT_NEAR_TOTAL_CUT, DEFAULT_WORD_THRESHOLDS

    values = {
        "name": "", "slug": "", "description": "", "word_thresholds": DEFAULT_WORD_THRESHOLDS,
        "near_total_cut": DEFAULT_NEAR_TOTAL_CUT, "length_band": DEFAULT_LENGTH_BAND,
        "assignment_design": AssignmentDesign.ONE_MODEL_PER_CLIP, "spread_gap": 5, "overlap_share": 0,
        "undo_seconds": None, "caption_language": CaptionLanguage.ENGLISH, "taxonomy": None,
        "erase_on_withdrawal": False,
    }
    if study is not None:
        values.update({field: getattr(study, field) for field in values if field != "taxonomy"})
        values["taxonomy"] = study.taxonomy_id
    return {
        "values": values,
        "editing": study.slug if study else None,
        "read_only": read_only,
        "taxonomies": _taxonomies(),
        "limits": {"slug_min": study_settings.SLUG_MIN, "slug_max": study_settings.SLUG_MAX,
                   "thresholds_max_count": study_settings.THRESHOLDS_MAX_COUNT,
                   "threshold_max_words": study_settings.THRESHOLD_MAX_WORDS,
                   "length_band_max": study_settings.LENGTH_BAND_MAX,
                   "spread_gap_max": study_settings.SPREAD_GAP_MAX,
                   "undo_seconds_max": study_settings.UNDO_SECONDS_MAX,
                   "name_max": study_settings.NAME_MAX, "description_max": study_settings.DESCRIPTION_MAX,
                   "reserved_slugs": sorted(study_settings.reserved_slugs())},
    }


def _form_context(data: dict) -> dict:
    return {
        "form_data": data,
        "meanings": study_settings.MEANINGS,
        "designs": AssignmentDesign.choices,
        "languages": CaptionLanguage.choices,
    }


@login_required
@require_safe
def study_new(request):
    if not may_create_studies(request.user):
        raise Http404("No such page.")
    return render(request, "frontend/study_form.html", _form_context(_form_data(None, read_only=False)))


def _admin_or_site_reader(request, slug: str) -> tuple[Study, bool]:
    """The study and whether the page is read-only (a site admin without a role); 404 else."""
    study = get_object_or_404(Study.objects.select_related("taxonomy"), slug=slug)
    if Role.ADMIN in user_roles(request.user, study):
        return study, False
    if is_site_reader(request.user, study):
        return study, True
    raise Http404("No such study.")


@login_required
@require_safe
def study_settings_page(request, slug: str):
    study, read_only = _admin_or_site_reader(request, slug)
    context = _form_context(_form_data(study, read_only=read_only))
    return render(request, "frontend/study_form.html", {**context, "study": study, "read_only": read_only})


@login_required
@require_safe
def study_members(request, slug: str):
    study, read_only = _admin_or_site_reader(request, slug)
    rows = [
        {"username": m.username, "roles": m.roles, "active": m.active, "since": m.since.isoformat(),
         "consent_version": m.consent[0] if m.consent else None,
         "consent_at": m.consent[1].isoformat() if m.consent else None}
        for m in members.members_list(study=study)
    ]
    data = {
        "study": study.slug, "read_only": read_only, "me": request.user.get_username(),
        "roles": [{"value": value, "label": label} for value, label in Role.choices],
        "members": rows, "days_default": members.INVITATION_DAYS_DEFAULT, "days_max": members.INVITATION_DAYS_MAX,
        "time_allowed_max": TIME_ALLOWED_MAX,
    }
    return render(request, "frontend/study_members.html", {
        "study": study, "read_only": read_only, "data": data, "withdrawals": withdrawals_list(study=study)})


@login_required
@require_safe
def study_history(request, slug: str):
    study, read_only = _admin_or_site_reader(request, slug)
    events = list(history_of(study)[:500])
    for event in events:
        event.summary = history_summary(event)
        event.before_text = _compact(event.before)
        event.after_text = _compact(event.after)
    return render(request, "frontend/study_history.html", {"study": study, "read_only": read_only, "events": events})


def _compact(values: dict) -> str:
    return ", ".join(f"{key}: {value}" for key, value in values.items()) if values else ""


def history_summary(event) -> str:
    """One sentence for a history event."""
    before, after = event.before, event.after
    user = after.get("user") or before.get("user") or ""
    roles = ", ".join(after.get("roles") or [])
    if event.action == "study_create":
        return "Created the study."
    if event.action == "study_update":
        return "Changed " + ", ".join(after) + "."
    if event.action == "member_add":
        return f"Added {user} as {roles}."
    if event.action == "site_admin_join":
        return f"Site admin {user} added themselves as {roles}."
    if event.action == "member_roles":
        released = f"; {after['claims_released']} review claim(s) released" if after.get("claims_released") else ""
        return f"Changed {user}'s roles from {', '.join(before.get('roles') or [])} to {roles}{released}."
    if event.action == "member_deactivate":
        released = f"; {after['claims_released']} review claim(s) released" if after.get("claims_released") else ""
        return f"Deactivated {user}{released}."
    if event.action == "invitation_create":
        return f"Made invitation #{after.get('invitation')} for {', '.join(after.get('roles') or [])}" + (
            f" ({after['note']})" if after.get("note") else "") + (
            f", to be sent to {after['email']}." if after.get("email") else ".")
    if event.action == "invitation_revoke":
        return f"Revoked invitation #{after.get('invitation')}."
    if event.action == "practice_configure":
        return "Changed the practice set and gold settings: " + ", ".join(after) + "."
    if event.action == "practice_retry_allow":
        return f"Allowed {user} another practice attempt."
    if event.action == "invitation_send":
        return (f"Sent invitation #{after.get('invitation')} to {after.get('email')} "
                "(a new link; an earlier one stops working).")
    if event.action == "recruitment_link_create":
        return (f"Made recruitment link #{after.get('link')} ({after.get('platform')}) for up to {after.get('cap')} "
                f"participants of {after.get('quota')} items each" + (f" ({after['label']})." if after.get("label")
                                                                      else "."))
    if event.action == "recruitment_link_close":
        return f"Closed recruitment link #{after.get('link')}."
    if event.action == "guidelines_update":
        if after.get("draft_replaced"):
            return f"Rewrote the draft guidelines (version {after.get('version')}, before the study started)."
        return f"Wrote guidelines version {after.get('version')}."
    if event.action == "consent_update":
        if after.get("draft_replaced"):
            return f"Rewrote the draft consent text (version {after.get('version')}, before the study started)."
        return f"Wrote consent text version {after.get('version')}."
    if event.action == "invitation_accept":
        return f"{user} accepted invitation #{after.get('invitation')} and is {roles}."
    if event.action == "participant_withdraw":
        return (f"{after.get('person')} withdrew; {after.get('released')} waiting item(s) went back to the pool"
                + (", erasure asked." if after.get("erase") else "."))
    if event.action == "participant_erase":
        return f"The content of {after.get('person')}'s {after.get('annotations')} annotation(s) was erased."
    if event.action == "payments_read":
        priced = f" at {after['rate']} an hour" if after.get("rate") else ""
        return (f"Read the participants' platform ids: the payments {after.get('read')}{priced}, "
                f"{after.get('ids')} id(s) of {after.get('participants')} participant(s).")
    if event.action == "profile_export_delete":
        return (f"Deleted the {before.get('state')} profile export {str(before.get('export'))[:8]} "
                f"asked for by {before.get('requested_by') or 'nobody named'} at {before.get('created_at')}.")
    if event.action == "profile_export_prune":
        return (f"Deleted {len(before.get('exports') or [])} old profile export(s): only the newest "
                f"{before.get('kept')} are kept (PROFILE_EXPORTS_KEPT).")
    return event.action


# --------------------------------------------------------------------------- invitations


@require_http_methods(["GET", "HEAD", "POST"])
def invitation(request, token: str):
    """Accept an invitation: signed in, as this account (or sign out and use another); signed
    out, by creating an account (or signing in to an existing one first)."""
    try:
        found = members.invitation_find(token)
    except members.InvitationInvalid as exc:
        return render(request, "frontend/invitation.html", {"invalid": str(exc)}, status=410)
    context = {"invitation": found, "study": found.study, "roles": [Role(r).label for r in found.roles],
               "errors": {}, "values": {}}
    if request.method != "POST":
        return render(request, "frontend/invitation.html", context)
    try:
        if request.user.is_authenticated:
            if request.POST.get("account") != request.user.get_username():
                context["errors"] = {"account": "Say which account accepts: press the button with your user name."}
                return render(request, "frontend/invitation.html", context, status=400)
            members.invitation_accept(token=token, user=request.user)
            user = request.user
        else:
            if request.POST.get("password") != request.POST.get("password2"):
                raise FieldErrors({"password2": "The two passwords differ."})
            user = members.invitation_accept_new_account(
                token=token, username=request.POST.get("username", ""), password=request.POST.get("password", ""),
                email=request.POST.get("email", "")[:254],
            )
            login(request, user, backend=BACKEND)
    except FieldErrors as exc:
        context.update(errors=exc.errors, values={"username": request.POST.get("username", ""),
                                                  "email": request.POST.get("email", "")})
        return render(request, "frontend/invitation.html", context, status=400)
    except ServiceError as exc:
        context["refused"] = str(exc)
        return render(request, "frontend/invitation.html", context, status=400)
    return redirect("study", slug=found.study.slug)

