"""The study's guidelines: the setup page where its admins write them (its script calls the REST
API, annotation.api.guidelines), and the side panel and notice that the workspace and the QC
review page show (frontend/templates/frontend/_guidelines_panel.html)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.http import require_safe

from annotation.models import ConsentVersion, GuidelineVersion, Study
from annotation.rules import consent as consent_rules
from annotation.rules import guidelines as text_rules
from annotation.services import guidelines as service
from annotation.services.taxonomy import taxonomy_modes
from frontend.views_setup import _admin_or_site_reader


def guidelines_context(study: Study, user) -> dict:
    """What the side panel and the notice show: the current version rendered (sanitised), its
    examples grouped by failure mode, and the person's notice (None when there is none)."""
    current = service.guidelines_current(study)
    if current is None:
        return {"current": None, "notice": None, "modes": []}
    view = service.guideline_view(current)
    return {"current": view, "modes": _by_mode(view), "notice": service.guidelines_notice(study=study, user=user)}


def _by_mode(view: dict) -> list[dict]:
    """The version's examples grouped by failure mode, in the order the modes first appear."""
    grouped: dict[str, dict] = {}
    for example in view["examples"]:
        grouped.setdefault(example["mode"], {"name": example["mode_name"], "examples": []})["examples"].append(example)
    return list(grouped.values())


@login_required
@require_safe
def study_guidelines(request, slug: str):
    study, read_only = _admin_or_site_reader(request, slug)
    versions = list(GuidelineVersion.objects.filter(study=study).select_related("created_by").order_by("-number"))
    current = versions[0] if versions else None
    data = {
        "study": study.slug, "read_only": read_only, "state": study.state,
        "text": current.text if current else "",
        "examples": current.examples if current else [],
        "modes": [{"key": m["key"], "name": m["name"]} for m in taxonomy_modes(study.taxonomy)],
        "limits": {"text_max_bytes": text_rules.TEXT_MAX_BYTES, "examples_max": text_rules.EXAMPLES_MAX,
                   "example_field_max": text_rules.EXAMPLE_FIELD_MAX},
    }
    consents = list(ConsentVersion.objects.filter(study=study).select_related("created_by").order_by("-number"))
    consent = {"study": study.slug, "text": consents[0].text if consents else "",
               "limits": {"text_max_bytes": consent_rules.TEXT_MAX_BYTES}}
    return render(request, "frontend/study_guidelines.html", {
        "study": study, "read_only": read_only, "data": data, "versions": versions,
        "current_html": text_rules.render(current.text) if current else "",
        "modes": _by_mode(service.guideline_view(current)) if current else [],
        "limits": data["limits"],
        "consent_data": consent, "consent_versions": consents,
        "consent_html": text_rules.render(consents[0].text) if consents else "",
    })
