"""The failure-profile page of a study, its export jobs and downloads; researchers and admins only.

The page starts an export job (``scoring.profile_jobs.profile_job_create``, run by Celery), follows
its progress, shows the per-model profile table and the figures, offers every file, and deletes
an export that has ended (``profile_job_delete``; exports beyond ``PROFILE_EXPORTS_KEPT`` go by
themselves). Corrected captions are built on request from the final verdicts. Everyone else
gets 404, as on the progress page: the profile names the models, which annotators and reviewers
must not learn.
"""

from __future__ import annotations

import mimetypes
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import FileResponse, Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.api.parsers import MAX_INTEGER_DIGITS, json_object_from_body
from annotation.errors import ServiceError
from annotation.models import Annotation, CandidateModel, Study
from annotation.permissions import Role, require_model_identity, user_roles
from annotation.rules import workflow
from annotation.selectors.counted import approved_excluded_by_withdrawal, counted_annotations
from scoring.freshness import scores_freshness
from scoring.llmfacts_results import llmfacts_by_model, llmfacts_result
from scoring.metrics import exports


def _profiles():
    """scoring.profiles, imported on first use: it pulls in pandas, SciPy and matplotlib,
    which every `manage.py` start would otherwise pay for."""
    from scoring import profiles

    return profiles


def _jobs():
    """scoring.profile_jobs, imported on first use (it imports scoring.profiles)."""
    from scoring import profile_jobs

    return profile_jobs

ALLOWED = {Role.ADMIN, Role.RESEARCHER}
# Shown in the browser rather than downloaded: images for the page, and the report, which the
# policy below keeps from running anything or loading anything but its own inlined figures.
INLINE = {".png"}
REPORT_POLICY = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; sandbox"


def _research_study(request, slug: str) -> Study:
    study = get_object_or_404(Study, slug=slug)
    if not user_roles(request.user, study) & ALLOWED:
        raise Http404("No such study.")
    require_model_identity(request.user, study)  # the profile names the models
    return study


def _job_data(study: Study, status: dict[str, Any] | None) -> dict[str, Any] | None:
    """The job's status with the URLs the page needs; with the main table and figures once done."""
    if status is None:
        return None
    job = status["job"]
    data = {key: status.get(key) for key in ("job", "state", "done", "total", "step", "error",
                                             "options", "requested_by", "created_at",
                                             "finished_at")}
    data["url"] = reverse("profile-job", args=[study.slug, job])
    total = status.get("total") or 1
    data["percent"] = round(100 * min(status.get("done", 0), total) / total)
    if status.get("state") != _jobs().DONE:
        return data

    def file_url(name: str) -> str:
        return reverse("profile-job-file", args=[study.slug, job, name])

    manifest = status["manifest"]
    data["zip"] = {"name": status["zip"], "url": file_url(status["zip"])}
    data["report_url"] = file_url(manifest["report"])
    data["files"] = [{"name": name, "url": file_url(name)} for name in status["files"]]
    data["figures"] = [
        {"name": f["name"], "caption": f["caption"], "png_url": file_url(f["png"]),
         "svg_url": file_url(f["svg"])}
        for f in manifest["figures"]
    ]
    data["figures_failed"] = manifest.get("figures_failed", {})
    # Tables and figures the study cannot support yet, with what each needs.
    data["not_computable"] = {
        **{t["name"]: t["not_computable"] for t in manifest["tables"] if t.get("not_computable")},
        **manifest.get("figures_not_computable", {}),
    }
    data["main_table"] = _jobs().main_table(study=study, job_id=job)
    for name in ("leaderboard", "judge_agreement", "rejection_by_exposure", "annotator_sensitivity"):
        data[name] = _jobs().profile_table(study=study, job_id=job, name=name)
    return data


@login_required
@require_GET
def profile_page(request, slug: str):
    return _render_profile_page(request, _research_study(request, slug))


def _render_profile_page(request, study: Study, *, error: str = "", form: dict | None = None,
                         status: int = 200):
    # Whoever opens the page sees an export whose process died sent again or failed.
    _jobs().profile_jobs_recover(study=study)
    jobs = _jobs().profile_jobs(study=study)
    # Final verdicts as the downloads count them: the study's work, no gold item's (counted_annotations).
    approved = counted_annotations(Annotation.objects.filter(caption__clip__study=study, state=workflow.APPROVED))
    counts = dict(approved.values("caption__model_id").annotate(n=Count("caption_id", distinct=True))
                  .values_list("caption__model_id", "n"))
    models = list(study.candidate_models.order_by("name"))
    for model in models:
        model.final_verdicts = counts.get(model.pk, 0)
    # The exports before the newest that have ended: each to download again or delete.
    earlier = [_job_data(study, status) for status in jobs[1:] if status["state"] in _jobs().ENDED]
    return render(request, "frontend/profiles.html", {
        "study": study,
        "models": models,
        "job": _job_data(study, jobs[0] if jobs else None),
        "earlier": earlier,
        "llmfacts": llmfacts_by_model(study=study),
        "excluded_by_withdrawal": approved_excluded_by_withdrawal(study),
        "freshness": scores_freshness(study),
        "exports_kept": settings.PROFILE_EXPORTS_KEPT,
        "defaults": {"resamples": 20_000, "adjusted_resamples": 4_000, "seed": 0, **(form or {})},
        "error": error,
    }, status=status)


def _number(data: dict[str, Any], key: str, default: int) -> int:
    value = data.get(key, default)
    if value in ("", None):
        return default
    name = key.replace("_", " ")
    if isinstance(value, str) and len(value.strip().lstrip("+-")) > MAX_INTEGER_DIGITS:
        raise ServiceError(f"{name} must be a whole number of at most {MAX_INTEGER_DIGITS} digits, "
                           f"not {value[:20]!r}...")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ServiceError(f"{name} must be a whole number, not {str(value)[:40]!r}.") from None


@login_required
@require_POST
def profile_job_start(request, slug: str):
    """Start an export job from a JSON body (resamples, adjusted_resamples, seed, paired_only):
    202 with the job's status. The page's form posted without JavaScript gets the page back:
    redirected to it with the new job, or shown again with the error."""
    study = _research_study(request, slug)
    from_form = request.content_type != "application/json"
    if not from_form:
        try:
            data = json_object_from_body(request.body, request.encoding or "utf-8")
        except ValueError as refusal:
            return JsonResponse({"detail": str(refusal)}, status=400)
    else:
        data = request.POST.dict()
    paired = data.get("paired_only", False)
    try:
        status = _jobs().profile_job_create(
            study=study,
            requested_by=request.user.get_username(),
            resamples=_number(data, "resamples", 20_000),
            adjusted_resamples=_number(data, "adjusted_resamples", 4_000),
            seed=_number(data, "seed", 0),
            paired_only=paired in (True, "true", "on", "1", 1),
        )
    except ServiceError as error:
        if from_form:
            kept = {key: data[key] for key in ("resamples", "adjusted_resamples", "seed") if key in data}
            return _render_profile_page(request, study, error=str(error), form=kept, status=400)
        return JsonResponse({"detail": str(error)}, status=400)
    if from_form:
        return redirect("profiles", slug=study.slug)
    # Report the state as it is now (queued, or already running in a worker or a job thread).
    status = _jobs().profile_job_status(study=study, job_id=status["job"]) or status
    return JsonResponse(_job_data(study, status), status=202)


@login_required
@require_http_methods(["GET", "DELETE"])
def profile_job(request, slug: str, job: str):
    """GET: the export's status. DELETE: delete an ended export (204), refused with 409 while
    it is queued or running."""
    study = _research_study(request, slug)
    if request.method == "DELETE":
        return _profile_job_delete(request, study, job)
    _jobs().profile_jobs_recover(study=study)
    status = _jobs().profile_job_status(study=study, job_id=job)
    if status is None:
        raise Http404("No such profile job.")
    return JsonResponse(_job_data(study, status))


def _profile_job_delete(request, study: Study, job: str) -> HttpResponse:
    jobs = _jobs()
    try:
        status = jobs.profile_job_delete(study=study, job_id=job, actor=request.user)
    except jobs.ProfileJobBusy as refusal:
        return JsonResponse({"detail": str(refusal)}, status=409)
    if status is None:
        raise Http404("No such profile job.")
    return HttpResponse(status=204)


@login_required
@require_GET
def profile_job_file(request, slug: str, job: str, name: str):
    """A file of a finished export: images and the report shown inline, the rest downloaded."""
    study = _research_study(request, slug)
    path = _jobs().profile_job_file(study=study, job_id=job, name=name)
    if path is None or not path.is_file():
        raise Http404("No such file.")
    is_report = name == "report.html"
    inline = (path.suffix in INLINE or is_report) and not request.GET.get("download")
    content_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    if content_type.startswith("text/") or content_type == "application/json":
        content_type += "; charset=utf-8"
    response = FileResponse(path.open("rb"), as_attachment=not inline, filename=path.name,
                            content_type=content_type)
    if is_report:
        response["Content-Security-Policy"] = REPORT_POLICY
    return response


def _model(study: Study, model_id: int) -> CandidateModel:
    return get_object_or_404(CandidateModel, study=study, pk=model_id)


@login_required
@require_GET
def corrected_jsonl(request, slug: str, model_id: int):
    """The model's corrected captions as JSON Lines, one final verdict per line."""
    study = _research_study(request, slug)
    model = _model(study, model_id)
    body = exports.jsonl(_profiles().corrected_captions(study, model))
    name = f"corrected-{study.slug}-{exports.safe_file_name(model.name)}.jsonl"
    response = HttpResponse(body, content_type="application/jsonl; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@login_required
@require_GET
def corrected_vtt(request, slug: str, model_id: int):
    """The model's corrected timelines as WebVTT: a zip of one file per clip, or with
    ``?clip=<name>`` that clip's file alone."""
    study = _research_study(request, slug)
    model = _model(study, model_id)
    captions = _profiles().corrected_captions(study, model)
    stem = f"corrected-{study.slug}-{exports.safe_file_name(model.name)}"
    clip = request.GET.get("clip")
    if clip is not None:
        found = [c for c in captions if c.clip == clip]
        if not found:
            raise Http404("This clip has no final verdict for this model.")
        response = HttpResponse(exports.webvtt(found[0]), content_type="text/vtt; charset=utf-8")
        name = f"{stem}-{exports.safe_file_name(clip)}.vtt"
    else:
        response = HttpResponse(_profiles().vtt_zip(exports.webvtt_files(captions)),
                                content_type="application/zip")
        name = f"{stem}-vtt.zip"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@login_required
@require_GET
def llmfacts_facts(request, slug: str, result_id: int):
    """The facts behind one LLMFactsF1: both texts' facts, each with its label and reason."""
    study = _research_study(request, slug)
    result = llmfacts_result(study=study, result_id=result_id)
    if result is None:
        raise Http404("No such LLMFactsF1 result in this study.")
    detail = result.detail or {}
    return render(request, "frontend/llmfacts_facts.html", {
        "study": study,
        "result": result,
        "detail": detail,
        "directions": [
            ("Facts of the final verdict, checked against the model's caption",
             detail.get("a_to_b", {})),
            ("Facts of the model's caption, checked against the final verdict",
             detail.get("b_to_a", {})),
        ],
    })
