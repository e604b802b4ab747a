"""Pages of the annotator: their queue in a study, and the workspace for one annotation.

Both pages are server templates; the workspace gets its first payload through
json_script and then calls the same REST API as every other client
(annotation.api.workflow).
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ObjectDoesNotExist
from django.db.models import Exists, OuterRef
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_safe

from annotation.api.workflow import WORKSPACE_RELATED, get_annotation_for, workspace_payload
from annotation.errors import StudyStateRefused
from annotation.models import Annotation, Participant, StudyState, Withdrawal
from annotation.permissions import (
    Role,
    is_member,
    remember_roles,
    require_study_work,
    roles_of_user,
    study_read_with_roles,
    user_roles,
)
from annotation.prepared import prepared
from annotation.rules import workflow
from annotation.selectors.queues import BadCursor
from annotation.selectors.queues import annotator_queue as queue_of
from annotation.selectors.work_gate import consent_columns, consent_read_with, work_gate_columns
from annotation.services.annotation_common import with_passes
from annotation.services.gold import practice_feedback, practice_standing
from annotation.services.recruitment import participant_complete, participant_of
from annotation.services.workflow import annotation_open
from frontend.views import study_of_page
from frontend.views_consent import consent_gate
from frontend.views_guidelines import guidelines_context

WAITING = (workflow.RETURNED, workflow.IN_PROGRESS, workflow.ASSIGNED)
DONE = (workflow.SUBMITTED, workflow.IN_REVIEW, workflow.APPROVED)


@prepared
def _study_with_work_gate_read(*, slug: str, user_id: int):
    """The study with the viewer's roles (study_of_page) and their gate to work."""
    return study_read_with_roles(slug=slug, user_id=user_id).annotate(
        **work_gate_columns(study=OuterRef("pk"), user_id=user_id))


@login_required
@require_safe
def annotator_queue(request, slug: str):
    # The viewer's withdrawal and consent come with the study (one statement).
    study = study_of_page(request, slug, read=_study_with_work_gate_read)
    if not is_member(request.user, study):
        raise Http404("No such study.")
    if study.withdrawn_at is not None:
        return redirect("withdraw", slug=study.slug)  # no more work: the page says why and what was done
    participant = participant_of(study=study, user=request.user)
    if participant is not None and participant_complete(participant=participant):
        return redirect("participant-done", slug=study.slug)  # their part is done: the code, no new work
    gate = consent_gate(request, study, consent=consent_read_with(study))
    if gate is not None:
        return gate
    try:
        after = request.GET.get("after") or None
        queue = queue_of(study=study, annotator=request.user, after=after)
    except BadCursor:
        return redirect("annotator-queue", slug=study.slug)
    for item in queue["items"]:
        item["label"] = Annotation.State(item["state"]).label
        item["open"] = item["state"] in WAITING
    counts = queue["counts"]
    total = queue["total"]
    practising = Role.ANNOTATOR in user_roles(request.user, study) and study.state == StudyState.RUNNING
    notice, due = practice_standing(study, request.user) if practising else (None, False)
    return render(
        request,
        "frontend/queue.html",
        {
            "study": study,
            "queue": queue,
            "is_annotator": Role.ANNOTATOR in user_roles(request.user, study),
            "to_do": sum(counts.get(state, 0) for state in WAITING),
            "returned": queue["returned"],
            "in_progress": counts.get(workflow.IN_PROGRESS, 0),
            "new": counts.get(workflow.ASSIGNED, 0),
            "with_qc": sum(counts.get(state, 0) for state in (workflow.SUBMITTED, workflow.IN_REVIEW)),
            "approved": counts.get(workflow.APPROVED, 0),
            "percent": round(100 * queue["done"] / total) if total else 0,
            "practice_notice": notice,
            "practice_due": due,
        },
    )


@prepared
def _workspace_page_read(*, annotation_id: int, user_id: int):
    """The workspace's annotation with its relations and its passes, its annotator's
    participation (recruited through a link) and whether they withdrew, the roles the person
    `user_id` holds in its study and the study's consent as they stand with it (consent_columns),
    in one statement."""
    study_id = OuterRef("caption__clip__study_id")
    return with_passes(Annotation.objects.select_related(*WORKSPACE_RELATED, "annotator__participation")).annotate(
        withdrawn=Exists(Withdrawal.objects.filter(study_id=study_id, user_id=OuterRef("annotator_id"))),
        **roles_of_user(study_id=study_id, user_id=user_id),
        **consent_columns(study=study_id, user_id=user_id)).filter(pk=annotation_id)


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def workspace(request, annotation_id: int):
    """The annotator's workspace; anyone else who may see the annotation is sent to its review page.

    Looking (GET) never changes the annotation: a new or returned one shows a "Start" button,
    whose POST starts the work and comes back here.
    """
    # Read once, with everything the page shows: the checks below are those of get_annotation_for.
    # Its annotator's participation (recruited through a link), and whether they withdrew, come in
    # the same statement.
    try:
        annotation = _workspace_page_read.one(annotation_id=annotation_id, user_id=request.user.pk)
    except Annotation.DoesNotExist:
        raise Http404("No such annotation.") from None
    study = annotation.caption.clip.study
    remember_roles(request.user, study, annotation)  # signed in (login_required)
    if annotation.annotator_id != request.user.pk:
        if user_roles(request.user, study) & {Role.REVIEWER, Role.ADMIN, Role.RESEARCHER}:
            return redirect("review", annotation_id=annotation.pk)
        raise Http404("No such annotation.")
    if not is_member(request.user, study):
        raise Http404("No such annotation.")  # a deactivated member no longer opens their work
    require_study_work(request.user, study)
    if annotation.withdrawn and annotation.purpose != Annotation.Purpose.GOLD:
        return redirect("withdraw", slug=study.slug)
    participant = _participation(annotation)  # the request's user is its annotator (above)
    if participant is not None and participant.study_id == study.pk and participant.completed_at:
        return redirect("participant-done", slug=study.slug)
    gate = consent_gate(request, study, consent=consent_read_with(annotation))
    if gate is not None:
        return gate
    if request.method == "POST":
        try:
            annotation_open(annotation=annotation, actor=request.user)
        except StudyStateRefused as refusal:
            return render(request, "frontend/workspace_start.html", {
                "annotation": annotation, "study": study, "refusal": str(refusal),
                "payload": workspace_payload(get_annotation_for(request.user, annotation.pk), request.user),
            }, status=409)
        return redirect("workspace", annotation_id=annotation.pk)
    payload = workspace_payload(annotation, request.user)
    context = {"annotation": annotation, "study": annotation.caption.clip.study, "payload": payload}
    # A practice item says so, and once submitted shows its feedback beside the work. (A hidden
    # gold check shows nothing of the kind: it is a practice item only that is known as one.)
    if annotation.purpose == Annotation.Purpose.PRACTICE:
        context["practice"] = True
        if annotation.state == workflow.SUBMITTED:
            context["feedback"] = practice_feedback(annotation)
    if annotation.state in workflow.TRANSITIONS["open"].sources:
        return render(request, "frontend/workspace_start.html", context)
    context["guidelines"] = guidelines_context(study, request.user)
    return render(request, "frontend/workspace.html", context)


def _participation(annotation: Annotation) -> Participant | None:
    """The annotator's participation as read with the annotation (None when they joined no link)."""
    try:
        return annotation.annotator.participation
    except ObjectDoesNotExist:
        return None
