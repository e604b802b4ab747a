"""The annotator quality page (sortable, with its CSV) and the work log of a study: its admins
see people by name, its researchers by pseudonym; other members are told who may see them (403),
people outside the study learn nothing (404). The numbers come from annotation.selectors.annotator_quality
and annotation.selectors.work_log, the same as the API's."""

from __future__ import annotations

import csv
import io

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_safe

from annotation.errors import ServiceError
from annotation.models import Study
from annotation.permissions import (
    PEOPLE_REFUSAL,
    is_site_reader,
    reads_people_work,
    sees_model_identity,
    sees_people,
    user_roles,
)
from annotation.rules.gold_agreement import MIN_ITEMS
from annotation.selectors.annotator_quality import COLUMNS, annotator_quality, row_values
from annotation.selectors.queues import page_size
from annotation.selectors.work_log import ACTION_LABELS, WORK_ACTIONS, people_of, work_log
from frontend.templatetags.progress_format import DASH, decimal, percent, seconds

# Columns whose values are shares (shown as percentages); other fractions are decimals.
SHARES = {"approved_rate", "amended_rate", "return_rate", "peer_agreement", "practice_overview_agreement",
          "gold_overview_agreement", "gold_window_agreement", "recent_gold_accuracy"}


def _shown(key: str, value) -> str:
    if key in SHARES:
        return percent(value)
    if key == "active_seconds":
        return seconds(value)
    if value is None:
        return DASH
    if isinstance(value, float):
        return decimal(value, 3 if key.endswith(("kappa", "f1")) else 1)
    return str(value)


def _study_for_people_readers(request, slug: str) -> tuple[Study, bool]:
    """The study and whether the reader sees people by name; 404 outside it, 403 to a member
    who may not read how people worked."""
    study = get_object_or_404(Study.objects.select_related("taxonomy"), slug=slug)
    if not user_roles(request.user, study) and not is_site_reader(request.user, study):
        raise Http404("No such study.")
    if not reads_people_work(request.user, study):
        raise PermissionDenied(PEOPLE_REFUSAL)
    return study, sees_people(request.user, study)


def _sorted_rows(request, study: Study, by_name: bool) -> tuple[list[dict], str, bool]:
    rows = [row_values(row) for row in annotator_quality(study=study, people=people_of(study, by_name=by_name))]
    keys = {key for key, _ in COLUMNS}
    sort = request.GET.get("sort", "person")
    sort = sort if sort in keys else "person"
    descending = request.GET.get("order") == "desc"
    # Blank cells (too few items) last, whichever the order.
    present = [row for row in rows if row[sort] is not None]
    blank = [row for row in rows if row[sort] is None]
    present.sort(key=lambda row: row["person"])
    present.sort(key=lambda row: row[sort], reverse=descending)  # stable: ties stay by person
    return present + blank, sort, descending


@login_required
@require_safe
def annotator_quality_page(request, slug: str):
    study, by_name = _study_for_people_readers(request, slug)
    rows, sort, descending = _sorted_rows(request, study, by_name)
    columns = [
        {"key": key, "label": label, "sorted": key == sort, "descending": descending and key == sort,
         "next_order": "asc" if key == sort and descending else ("desc" if key == sort else "asc"),
         "share": key in SHARES}
        for key, label in COLUMNS
    ]
    table = [
        {"person": row["person"], "notes": row["notes"],
         "cells": [{"key": c["key"], "shown": _shown(c["key"], row[c["key"]])} for c in columns[1:]]}
        for row in rows
    ]
    return render(request, "frontend/annotator_quality.html", {
        "study": study, "columns": columns, "rows": table, "by_name": by_name, "minimum": MIN_ITEMS,
        "sort": sort, "order": "desc" if descending else "asc",
    })


def _csv_cell(value) -> str:
    """A cell a spreadsheet shows as text: a leading =, +, - or @ (a formula) is quoted with '."""
    if value is None:
        return ""
    text = str(value)
    if isinstance(value, str) and text[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + text
    return text


@login_required
@require_safe
def annotator_quality_csv(request, slug: str):
    study, by_name = _study_for_people_readers(request, slug)
    rows, _, _ = _sorted_rows(request, study, by_name)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([key for key, _ in COLUMNS] + ["notes"])
    for row in rows:
        writer.writerow([_csv_cell(row[key]) for key, _ in COLUMNS] + [_csv_cell(row["notes"])])
    response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-annotator-quality.csv"'
    return response


@login_required
@require_safe
def work_log_page(request, slug: str):
    study, by_name = _study_for_people_readers(request, slug)
    people = people_of(study, by_name=by_name)
    filters = {key: request.GET.get(key, "").strip() for key in ("person", "clip", "action")}
    error = ""
    try:
        page = work_log(study=study, people=people, names=sees_model_identity(request.user, study),
                        before=request.GET.get("before"), limit=page_size(request.GET.get("limit")), **filters)
    except ServiceError as exc:
        error, page = str(exc), {"entries": [], "next": None}
    return render(request, "frontend/work_log.html", {
        "study": study, "page": page, "filters": filters, "error": error, "by_name": by_name,
        "people": sorted(set(people.shown.values())),
        "actions": [(action, ACTION_LABELS[action]) for action in WORK_ACTIONS],
    }, status=400 if error else 200)
