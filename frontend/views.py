"""Server-rendered pages. Data for scripts goes through json_script; scripts call the REST API."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_safe

from annotation.api.serializers import CaptionImportJobSerializer, CaptionSerializer
from annotation.models import AssignmentDesign, Caption, Clip, Study
from annotation.permissions import (
    Role,
    is_member,
    is_site_reader,
    may_create_studies,
    require_study_work,
    sees_every_caption,
    sees_model_identity,
    sees_study_work,
    setup_hidden_message,
    studies_of,
    study_with_roles,
    user_roles,
)
from annotation.selectors.clips import BadPage, clip_page, page_number
from annotation.selectors.queues import WAITING as QUEUE_WAITING
from annotation.selectors.queues import annotator_queue
from annotation.services.caption_jobs import caption_import_jobs_shown
from annotation.services.taxonomy import taxonomy_modes
from frontend.views_lifecycle import lifecycle_context


def study_of_page(request, slug: str, *, read=None) -> Study:
    """The study named in the page's address, with its taxonomy and the viewer's roles there
    (annotation.permissions.study_with_roles, with `read`'s columns when given); 404 if there
    is none."""
    study = study_with_roles(request.user, slug, read=read)
    if study is None:
        raise Http404("No such study.")
    return study


def _member_study(request, slug: str) -> Study:
    study = study_of_page(request, slug)
    if not is_member(request.user, study):
        raise Http404("No such study.")
    return study


@login_required
@require_safe
def home(request):
    archived = request.GET.get("archived") == "1"
    studies = studies_of(request.user, archived=archived).annotate(
        clip_count=Count("clips", distinct=True),
        model_count=Count("candidate_models", distinct=True),
    )
    rows = [
        {"study": study, "roles": sorted(user_roles(request.user, study))} for study in studies
    ]
    hidden = 0 if archived else studies_of(request.user, archived=True).filter(state="archived").count()
    return render(request, "frontend/home.html", {
        "rows": rows, "archived": archived, "hidden": hidden, "may_create": may_create_studies(request.user),
    })


@login_required
@require_safe
def study_detail(request, slug: str):
    """The study's page. Its admins and researchers (and a site admin reading it) browse its clips
    a page at a time (``?page=``, CLIPS_PER_PAGE a page, with their count); an annotator sees
    their own work instead (their progress and what is next), never the study's whole clip list:
    the page costs the same statements and bytes for ten clips or ten thousand."""
    study = study_of_page(request, slug)
    read_only = is_site_reader(request.user, study)  # a site admin without a role: looks only
    if not read_only and not is_member(request.user, study):
        raise Http404("No such study.")
    roles = user_roles(request.user, study)
    shows_work = sees_study_work(request.user, study)
    lists_clips = shows_work and (read_only or sees_every_caption(request.user, study))
    try:
        clips = clip_page(study, page=page_number(request.GET.get("page"))) if lists_clips else None
    except BadPage as refusal:  # plain text: the refusal quotes what was asked for
        return HttpResponse(str(refusal), status=400, content_type="text/plain; charset=utf-8")
    models = study.candidate_models.annotate(caption_count=Count("captions"))
    is_admin = Role.ADMIN in roles
    your_work = None
    if Role.ANNOTATOR in roles and shows_work:
        queue = annotator_queue(study=study, annotator=request.user, limit=1)
        total = queue["total"]
        your_work = {**queue, "next_item": queue["items"][0] if queue["items"] else None,
                     "percent": round(100 * queue["done"] / total) if total else 0,
                     "to_do": sum(queue["counts"].get(state, 0) for state in QUEUE_WAITING)}
    # The caption imports still running (a reload resumes their progress bars) and the last one.
    import_jobs = caption_import_jobs_shown(study=study) if is_admin else []
    return render(
        request,
        "frontend/study.html",
        {
            "study": study,
            "clips": clips,
            "your_work": your_work,
            "models": models if lists_clips else models.none(),
            "work_hidden": "" if shows_work else setup_hidden_message(study),
            "modes": taxonomy_modes(study.taxonomy),
            "roles": sorted(roles),
            "is_admin": is_admin,
            # Researchers start scoring jobs too: the profiles' leaderboard needs one after new verdicts.
            "starts_scoring": bool(roles & {Role.ADMIN, Role.RESEARCHER}),
            "caption_import_jobs": CaptionImportJobSerializer(import_jobs, many=True).data,
            "annotator_names": (
                study.memberships.filter(role=Role.ANNOTATOR).order_by("user__username")
                .values_list("user__username", flat=True) if is_admin else []),
            "designs": AssignmentDesign.choices,
            "sees_identity": sees_model_identity(request.user, study),
            "sees_everything": sees_every_caption(request.user, study),
            "read_only": read_only,
            **lifecycle_context(request, study, roles=roles),
        },
    )


@login_required
@require_safe
def clip_detail(request, slug: str, name: str):
    study = _member_study(request, slug)
    require_study_work(request.user, study)
    clip = get_object_or_404(Clip, study=study, name=name)
    captions = (
        Caption.objects.filter(clip=clip).select_related("clip", "model").prefetch_related("windows")
    )
    sees_everything = sees_every_caption(request.user, study)
    if not sees_everything:
        captions = captions.filter(annotations__annotator=request.user)
    sees_identity = sees_model_identity(request.user, study)
    caption_data = CaptionSerializer(captions, many=True, context={"sees_identity": sees_identity}).data
    return render(
        request,
        "frontend/clip.html",
        {
            "study": study,
            "clip": clip,
            "sees_everything": sees_everything,
            "captions": caption_data,
            "references": clip.references.all() if sees_identity else [],
            "clip_data": {"duration": clip.duration, "fps": clip.fps, "captions": caption_data},
        },
    )
