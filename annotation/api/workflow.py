"""REST API of the annotation workflow: queues, the workspace's autosave, QC actions.

Each view checks who may act, calls one service and returns the annotation's
snapshot. A stale save or a lost race answers 409 with the current state.
"""

from __future__ import annotations

import math
from dataclasses import replace

from django.contrib.auth import get_user_model
from django.db.models import OuterRef
from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.api import workflow_bodies as bodies
from annotation.api.schema import PerActionSchema
from annotation.errors import ServiceError
from annotation.models import Annotation, AssignmentDesign, AuditEvent, Study, StudyState
from annotation.permissions import (
    IsStudyAdmin,
    IsStudyMember,
    Role,
    SeesStudyWork,
    is_member,
    member_study_from_view,
    memberships_read,
    remember_roles,
    require_study_work,
    roles_of_user,
    sees_model_identity,
    study_from_view,
    user_roles,
)
from annotation.prepared import prepared
from annotation.rules import workflow
from annotation.selectors.queues import annotator_queue, page_size, review_queue
from annotation.selectors.work_gate import remember_work_gate, work_gate_columns
from annotation.services.annotation_common import caption_windows, undo_seconds_of, with_passes
from annotation.services.gold import practice_notice, real_work_allowed
from annotation.services.recruitment import participant_complete, participant_of
from annotation.services.taxonomy import taxonomy_modes
from annotation.services.workflow import (
    Conflict,
    NotAllowed,
    annotation_open,
    annotation_save,
    annotation_snapshot,
    annotation_start_next,
    annotation_submit,
    annotations_assign,
    decision_undo,
    overview_lock,
    review_amend,
    review_approve,
    review_claim,
    review_claim_next,
    review_release,
    review_return,
)
from scoring.metrics import edits, exports, final

REVIEW_PAGE = 50


PAGE_PARAMETERS = [
    OpenApiParameter("after", str, description="the previous page's `next`"),
    OpenApiParameter("limit", int, description="items per page"),
]
CONFLICT = OpenApiResponse(
    bodies.ConflictAnswer, description="Someone acted first; `current` is the annotation now."
)


def workspace_payload(annotation: Annotation, user) -> dict:
    """Everything the workspace and review pages need about one annotation."""
    caption = annotation.caption
    clip = caption.clip
    study = clip.study
    # The annotator works blind, even one who is also an admin of the study; an annotator of the
    # study never sees names, not even on others' annotations (sees_model_identity); and a
    # reviewer reviews blind, even one who is also an admin: an item they review (theirs, or
    # waiting in the review queue they draw from) shows the alias, as the review page does.
    sees_identity = (sees_model_identity(user, study) and annotation.annotator_id != user.pk
                     and not reviews_it(user, annotation))
    snapshot = annotation_snapshot(annotation)
    windows = [{"index": w.index, "start": w.start, "end": w.end, "scene": w.scene, "shot": w.shot}
               for w in caption_windows(caption_id=caption.pk)]
    if snapshot["undo"] and (annotation.undo or {}).get("actor") != user.pk:
        snapshot["undo"] = None  # only who took the decision is offered to undo it
    return {
        **snapshot,
        "undo_seconds": undo_seconds_of(study),
        "study": study.slug,
        "study_state": study.state,
        # Closed or archived: the page shows the work and changes nothing (services refuse).
        "read_only": study.state != StudyState.RUNNING,
        "near_total_cut": study.near_total_cut,
        "caption_language": study.caption_language,
        "annotator": annotation.annotator.username,
        "clip": {"id": clip.pk, "name": clip.name, "duration": clip.duration, "fps": clip.fps,
                 "video_url": f"/clips/{clip.pk}/video",
                 "poster_url": f"/clips/{clip.pk}/poster" if clip.poster else None,
                 "shot_changes": clip.shot_changes or []},
        "caption": {
            "model": caption.model.name if sees_identity else caption.model.alias,
            "overview": caption.overview,
            "windows": windows,
        },
        "taxonomy": {
            "name": str(annotation.taxonomy),
            "precedence_rules": annotation.taxonomy.precedence_rules,
            "modes": [dict(mode) for mode in taxonomy_modes(annotation.taxonomy)],
        },
        "final": final_version(annotation, snapshot, windows,
                               model=caption.model.name if sees_identity else caption.model.alias),
    }


def final_version(annotation: Annotation, snapshot: dict, windows: list[dict], *, model: str) -> dict | None:
    """The approved annotation's final caption, as the exports write it
    (:func:`scoring.metrics.final.final_caption`, with the study's edit sizes); None before."""
    if annotation.state != workflow.APPROVED:
        return None
    caption = annotation.caption
    passes = {"annotator": snapshot["annotator_pass"], "qc": snapshot["qc_pass"]}
    kind = final.final_kind(passes)
    corrected = final.final_caption(
        clip=caption.clip.name, model=model, original_overview=caption.overview,
        original_windows=[dict(window) for window in windows],
        final=passes[kind], final_kind=kind, sizing=edits.EditSizing.of(caption.clip.study),
        annotator=annotation.annotator.username,
        reviewer=annotation.reviewer.username if annotation.reviewer_id else "")
    return exports.caption_record(corrected)


def reviews_it(user, annotation: Annotation) -> bool:
    """Whether `user` reviews this annotation: its reviewer, or a reviewer of the study while it
    waits for review or is in review."""
    if annotation.reviewer_id == user.pk:
        return True
    return (annotation.state in (workflow.SUBMITTED, workflow.IN_REVIEW)
            and Role.REVIEWER in user_roles(user, annotation.caption.clip.study))


# What workspace_payload reads of an annotation's relations, read with it in one statement.
WORKSPACE_RELATED = ("caption__clip__study", "caption__model", "taxonomy", "annotator", "reviewer")


@prepared
def workspace_read(*, annotation_id: int, user_id: int):
    """An annotation with what workspace_payload reads of its relations and its passes, and the
    roles the person `user_id` holds in its study, in one statement."""
    return with_passes(Annotation.objects.select_related(*WORKSPACE_RELATED)).annotate(
        **roles_of_user(study_id=OuterRef("caption__clip__study_id"), user_id=user_id)).filter(pk=annotation_id)


def get_annotation_for(user, annotation_id: int) -> Annotation:
    """The annotation if `user` may see it: its annotator, the study's reviewers, admins, researchers."""
    try:
        annotation = workspace_read.one(annotation_id=int(annotation_id), user_id=user.pk or 0)
    except Annotation.DoesNotExist:
        raise Http404("No such annotation.") from None
    study = annotation.caption.clip.study
    if user.is_authenticated:
        remember_roles(user, study, annotation)
    roles = user_roles(user, study)
    if roles:
        require_study_work(user, study)  # nothing of a study being set up, for its annotators
    # A deactivated member (no roles left) no longer opens even their own work.
    if roles and (annotation.annotator_id == user.pk or roles & {Role.REVIEWER, Role.ADMIN, Role.RESEARCHER}):
        return annotation
    if not roles:  # as the pages: outsiders learn nothing about other studies' annotations
        raise NotFound("No such annotation.")
    raise PermissionDenied("This annotation is not yours to see.")


def service_response(call, user, annotation_id: int, ok_status=status.HTTP_200_OK, *, full: bool = True):
    """Run a service; answer with the workspace payload, or with the snapshot alone when
    `full` is off (autosaves: the page already has the clip, caption and taxonomy)."""
    try:
        annotation = call()
    except Annotation.DoesNotExist:
        raise NotFound("No such annotation.") from None  # a 404, as a read of it answers
    except Conflict as conflict:
        return Response({"detail": str(conflict), "current": conflict.current}, status=status.HTTP_409_CONFLICT)
    except NotAllowed as exc:
        get_annotation_for(user, annotation_id)  # 404 for outsiders, as everywhere
        return Response({"detail": str(exc)}, status=status.HTTP_403_FORBIDDEN)
    except ServiceError as exc:
        return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
    if not full:
        return Response(annotation_snapshot(annotation, annotation.annotator_pass_snapshot), status=ok_status)
    annotation = get_annotation_for(user, annotation.pk)
    return Response(workspace_payload(annotation, user), status=ok_status)


# --------------------------------------------------------------------------- annotator


class MyQueue(APIView):
    """A page of the annotator's queue; `after` (the previous page's `next`) and `limit`."""

    permission_classes = [IsStudyMember]  # one's own queue, empty in setup (queues.annotator_queue)

    @extend_schema(parameters=PAGE_PARAMETERS, responses=bodies.AnnotatorQueue)
    def get(self, request, slug):
        params = request.query_params
        try:
            return Response(annotator_queue(
                study=study_from_view(self), annotator=request.user,
                after=params.get("after") or None, limit=page_size(params.get("limit")),
            ))
        except ServiceError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)


@prepared
def _memberships_with_work_gate_read(*, slug: str, user_id: int):
    """The person's memberships of the study, each with its study and their gate to work."""
    return memberships_read(slug=slug, user_id=user_id).annotate(
        **work_gate_columns(study=OuterRef("study_id"), user_id=user_id))


class IsStudyMemberStartingWork(BasePermission):
    """IsStudyMember for a view that starts work: the person's gate to work (withdrawal,
    consent, time allowed) is read with their membership, in one statement, and kept for the
    service's work_start_require."""

    message = IsStudyMember.message

    def has_permission(self, request, view):
        study = member_study_from_view(view, request.user, read=_memberships_with_work_gate_read)
        # Absent, or without the gate, when an earlier check of the view read the study.
        membership = getattr(view, "_membership_read", None)
        if membership is not None and hasattr(membership, "withdrawn_at"):
            remember_work_gate(study, request.user, membership)
        return is_member(request.user, study)


class StartNext(APIView):
    """Open the next item: returned ones first, then work in progress, then new ones."""

    permission_classes = [IsStudyMemberStartingWork]  # annotation_start_next checks the gate first

    @extend_schema(request=None, responses={200: bodies.Opened, 403: bodies.Error, 409: bodies.Error})
    def post(self, request, slug):
        try:
            annotation_id = annotation_start_next(study=study_from_view(self), annotator=request.user)
        except Conflict as conflict:
            return Response({"detail": str(conflict)}, status=status.HTTP_409_CONFLICT)
        except NotAllowed as exc:  # the study is not running
            return Response({"detail": str(exc)}, status=status.HTTP_403_FORBIDDEN)
        if annotation_id is None:
            study = study_from_view(self)
            participant = participant_of(study=study, user=request.user)
            if participant is not None and participant_complete(participant=participant):
                return Response({"detail": "Your part is done: thank you.", "url": f"/studies/{study.slug}/done/"},
                                status=status.HTTP_404_NOT_FOUND)
            notice = practice_notice(study, request.user) if not real_work_allowed(study, request.user) else None
            return Response({"detail": notice or "Nothing left in your queue."}, status=status.HTTP_404_NOT_FOUND)
        return Response({"id": annotation_id, "url": f"/annotate/{annotation_id}/"})


class AnnotationDetail(APIView):
    """The annotation as the workspace sees it. Reading never changes it (see AnnotationOpen)."""

    @extend_schema(responses=bodies.Workspace)
    def get(self, request, annotation_id):
        annotation = get_annotation_for(request.user, annotation_id)
        return Response(workspace_payload(annotation, request.user))


class AnnotationOpen(APIView):
    """The annotator starts work on a new or returned annotation; once started, opening it again
    (the workspace does on each visit) starts counting this visit's active time from now."""

    @extend_schema(request=None, responses={200: bodies.Workspace})
    def post(self, request, annotation_id):
        annotation = get_annotation_for(request.user, annotation_id)
        return service_response(
            lambda: annotation_open(annotation=annotation, actor=request.user),
            request.user, annotation_id,
        )


class AnnotationDraft(APIView):
    @extend_schema(request=bodies.Draft, responses={200: bodies.Snapshot, 409: CONFLICT})
    def patch(self, request, annotation_id):
        data = bodies.Draft(data=request.data)
        data.is_valid(raise_exception=True)
        return service_response(
            lambda: annotation_save(annotation_id=annotation_id, actor=request.user,
                                    base_version=data.validated_data["base_version"],
                                    changes=data.validated_data["changes"]),
            request.user, annotation_id, full=False,
        )


class VersionedAction(APIView):
    """An annotator's step that needs only the version it is based on (lock, submit)."""

    service = None

    @extend_schema(request=bodies.BaseVersion, responses={200: bodies.Workspace, 409: CONFLICT})
    def post(self, request, annotation_id):
        data = bodies.BaseVersion(data=request.data)
        data.is_valid(raise_exception=True)
        return service_response(
            lambda: type(self).service(annotation_id=annotation_id, actor=request.user,
                                       base_version=data.validated_data["base_version"]),
            request.user, annotation_id,
        )


class OverviewLock(VersionedAction):
    service = staticmethod(overview_lock)


class AnnotationSubmit(APIView):
    """Send to QC; after a return, with replies to the reviewer's comments ({unit: text})."""

    @extend_schema(request=bodies.Submit, responses={200: bodies.Workspace, 409: CONFLICT})
    def post(self, request, annotation_id):
        data = bodies.Submit(data=request.data)
        data.is_valid(raise_exception=True)
        return service_response(
            lambda: annotation_submit(annotation_id=annotation_id, actor=request.user,
                                      base_version=data.validated_data["base_version"],
                                      replies=data.validated_data["replies"]),
            request.user, annotation_id,
        )


class DecisionUndo(APIView):
    """Take back your last lock, submission, approval or amendment while its undo window is open
    (the study's undo_seconds, else settings.UNDO_SECONDS); 403 for anyone else, 409 once the window passed."""

    @extend_schema(request=None, responses={200: bodies.Workspace, 409: CONFLICT})
    def post(self, request, annotation_id):
        annotation = get_annotation_for(request.user, annotation_id)  # 404 for outsiders
        study = annotation.caption.clip.study
        if annotation.annotator_id != request.user.pk and Role.REVIEWER not in user_roles(request.user, study):
            raise PermissionDenied("Only the annotator and the study's QC reviewers take decisions to undo.")
        return service_response(
            lambda: decision_undo(annotation_id=annotation_id, actor=request.user),
            request.user, annotation_id,
        )


class EditSize(APIView):
    """The edit size and redline of two texts, computed by the scoring library itself.

    For members of the study named in the body, and for texts no longer than an overview may
    be: the work grows with the square of the length.
    """

    @extend_schema(request=bodies.EditSize, responses=bodies.EditSizeAnswer)
    def post(self, request):
        data = bodies.EditSize(data=request.data)
        data.is_valid(raise_exception=True)
        study = Study.objects.filter(slug=data.validated_data["study"]).first()
        if study is None or not user_roles(request.user, study):
            raise NotFound("No such study among yours.")
        original, corrected = data.validated_data["original"], data.validated_data["corrected"]
        cut = data.validated_data.get("near_total_cut", study.near_total_cut)
        language = study.caption_language
        size = replace(edits.EditSizing.of(study), near_total_cut=cut).measure(original, corrected)
        return Response({
            "language": language,
            "words_changed": size.words_changed,
            "char_similarity": size.char_similarity,
            "near_total": size.near_total,
            # A text written from nothing grew by no finite share (the library says +inf).
            "length_change": size.length_change if math.isfinite(size.length_change) else None,
            "direction": size.direction,
            "diff": [{"op": s.op, "text": s.text} for s in edits.word_diff(original, corrected, language=language)],
        })


# --------------------------------------------------------------------------- QC


class ReviewQueue(APIView):
    """A page of the review queue: `order` (risk, oldest), filters `model`, `annotator`,
    `state`; `after` (the previous page's `next`) and `limit`."""

    permission_classes = [IsStudyMember, SeesStudyWork]

    @extend_schema(
        parameters=[
            OpenApiParameter("order", str, enum=["risk", "oldest"]),
            OpenApiParameter("model", str, description="only this model (its alias)"),
            OpenApiParameter("annotator", str, description="only this annotator (username)"),
            OpenApiParameter("state", str, description="only this state (default: submitted "
                             "and in review)"),
            *PAGE_PARAMETERS,
        ],
        responses=bodies.ReviewQueue,
    )
    def get(self, request, slug):
        study = study_from_view(self)
        if not user_roles(request.user, study) & {Role.REVIEWER, Role.ADMIN}:
            raise PermissionDenied("Only QC reviewers and study admins see the review queue.")
        params = request.query_params
        try:
            return Response(review_queue(
                study=study, reviewer=request.user, order=params.get("order", "risk"),
                model_alias=params.get("model") or None, annotator=params.get("annotator") or None,
                state=params.get("state") or None, after=params.get("after") or None,
                limit=page_size(params.get("limit"), default=REVIEW_PAGE),
            ))
        except ServiceError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)


class ReviewNext(APIView):
    """Claim the next item of the review queue (`order`: risk or oldest) and open it."""

    permission_classes = [IsStudyMemberStartingWork]  # review_claim_next checks the gate first

    @extend_schema(
        request=bodies.ReviewNext,
        parameters=[OpenApiParameter("order", str, enum=["risk", "oldest"])],
        responses={200: bodies.Opened, 403: bodies.Error, 409: bodies.Error},
    )
    def post(self, request, slug):
        data = bodies.ReviewNext(data=request.data)
        data.is_valid(raise_exception=True)
        order = data.validated_data.get("order") or request.query_params.get("order") or "risk"
        try:
            annotation_id = review_claim_next(
                study=study_from_view(self), actor=request.user, order=order,
            )
        except Conflict as conflict:
            return Response({"detail": str(conflict)}, status=status.HTTP_409_CONFLICT)
        except NotAllowed as exc:
            raise PermissionDenied(str(exc)) from exc
        except ServiceError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        if annotation_id is None:
            return Response(
                {"detail": "Nothing is waiting for review."}, status=status.HTTP_404_NOT_FOUND
            )
        return Response({"id": annotation_id, "url": f"/review/{annotation_id}/"})


class ReviewAction(APIView):
    action = ""
    schema = PerActionSchema()
    schema_by_action = {
        action: (body, {200: bodies.Workspace, 409: CONFLICT})
        for action, body in [("claim", None), ("release", None), ("approve", None),
                             ("amend", bodies.Amend), ("return", bodies.Return)]
    }

    def post(self, request, annotation_id):
        annotation = get_annotation_for(request.user, annotation_id)
        user = request.user
        # Services check the role for claim and the decisions; release must not be a silent
        # no-op for people who may never hold a claim.
        if Role.REVIEWER not in user_roles(user, annotation.caption.clip.study):
            raise PermissionDenied("Only the study's QC reviewers act on reviews.")
        if self.action == "claim":
            call = lambda: review_claim(annotation_id=annotation_id, actor=user)  # noqa: E731
        elif self.action == "release":
            call = lambda: review_release(annotation_id=annotation_id, actor=user)  # noqa: E731
        elif self.action == "approve":
            call = lambda: review_approve(annotation_id=annotation_id, actor=user)  # noqa: E731
        elif self.action == "amend":
            data = bodies.Amend(data=request.data)
            data.is_valid(raise_exception=True)
            call = lambda: review_amend(annotation_id=annotation_id, actor=user,  # noqa: E731
                                        changes=data.validated_data["changes"])
        else:
            data = bodies.Return(data=request.data)
            data.is_valid(raise_exception=True)
            call = lambda: review_return(annotation_id=annotation_id, actor=user,  # noqa: E731
                                         units=data.validated_data["units"],
                                         comment=data.validated_data["comment"])
        return service_response(call, user, annotation_id)


class AuditTrail(APIView):
    @extend_schema(responses=bodies.AuditEntry(many=True))
    def get(self, request, annotation_id):
        annotation = get_annotation_for(request.user, annotation_id)
        events = AuditEvent.objects.filter(annotation=annotation).select_related("actor")
        return Response([
            {"at": e.at.isoformat(), "actor": e.actor.username if e.actor_id else None,
             "action": e.action, "before": e.before, "after": e.after}
            for e in events
        ])


# --------------------------------------------------------------------------- admin


class Assign(APIView):
    permission_classes = [IsStudyAdmin]

    @extend_schema(request=bodies.Assign, responses={201: bodies.Assigned})
    def post(self, request, slug):
        study = study_from_view(self)
        data = bodies.Assign(data=request.data)
        data.is_valid(raise_exception=True)
        names = data.validated_data["annotators"]
        users = {u.username: u for u in get_user_model().objects.filter(username__in=names)}
        missing = [n for n in names if n not in users]
        if missing:
            return Response({"detail": f"No such user(s): {', '.join(missing)}."}, status=400)
        try:
            report = annotations_assign(
                study=study, annotators=[users[n] for n in names],
                overlap_share=data.validated_data.get("overlap_share", study.overlap_share),
                seed=data.validated_data.get("seed"),
                design=data.validated_data.get("design"), gap=data.validated_data.get("gap"),
                actor=request.user,
            )
        except ServiceError as exc:
            return Response({"detail": str(exc)}, status=400)
        design = AssignmentDesign(report.design).label
        return Response({"created": report.created, "skipped": report.skipped, "design": report.design,
                         "reasons": report.reasons,
                         "detail": f"Assigned {report.created} caption(s), {design}."}, status=201)
