"""REST API of gold verdicts, the practice set and qualification (annotation.services.gold).

- ``/api/studies/<slug>/gold/``: the gold items (study admins and gold experts); POST makes a
  caption a gold item whose gold verdict its maker then makes in the workspace.
- ``/api/studies/<slug>/gold/import/``: gold verdicts from a file in the bundle's annotation
  format (study admins).
- ``/api/studies/<slug>/practice/``: the practice set, its pass rule and the gold settings (study
  admins read and change them).
- ``/api/studies/<slug>/practice/qualifications/``: every annotator's practice result; ``.../<username>/retry/``
  allows a failed annotator another attempt (study admins).
- ``/api/studies/<slug>/practice/mine/``: one's own qualification (any member).
- ``/api/annotations/<id>/practice-feedback/``: the feedback of a submitted practice item (its
  annotator, and the study's admins).

Gold items are listed by clip and model alias (blind), like every item of the workspace.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.parsers import JSONParser, MultiPartParser
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.api.studies import refused
from annotation.api.workflow_bodies import Error
from annotation.errors import ServiceError
from annotation.models import Annotation
from annotation.permissions import (
    IsStudyAdmin,
    IsStudyMember,
    Role,
    member_study_from_view,
    require_study_work,
    study_from_view,
    user_roles,
)
from annotation.rules import study_settings
from annotation.services import gold
from annotation.services.gold_import import gold_import


class IsGoldMaker(BasePermission):
    """Study admins and the gold experts they named."""

    message = "Only the study's admins and gold experts may do this."

    def has_permission(self, request, view):
        study = member_study_from_view(view, request.user)
        return bool(user_roles(request.user, study) & {Role.ADMIN, Role.EXPERT})


class GoldItemAnswer(serializers.Serializer):
    id = serializers.IntegerField()
    caption = serializers.IntegerField()
    clip = serializers.CharField()
    model = serializers.CharField(help_text="the model's neutral alias")
    annotation = serializers.IntegerField(help_text="the gold verdict (an annotation of purpose gold)")
    made_by = serializers.CharField()
    state = serializers.CharField(help_text="the gold verdict's state: submitted means ready")
    ready = serializers.BooleanField()
    in_practice_set = serializers.BooleanField()
    source = serializers.CharField(help_text="workspace or import")
    created_at = serializers.DateTimeField()
    url = serializers.CharField(help_text="the workspace where its maker makes the gold verdict")


class PoolAnswer(serializers.Serializer):
    pool = serializers.IntegerField(help_text="ready gold items outside the practice set")
    rate = serializers.FloatField()
    largest_queue = serializers.IntegerField()
    needed = serializers.IntegerField(help_text="gold checks the largest queue meets at the rate, on average")
    exhausted_for = serializers.ListField(
        child=serializers.CharField(), help_text="annotators who met the whole pool: their queue goes on without gold"
    )
    running_out = serializers.BooleanField()


class GoldListAnswer(serializers.Serializer):
    items = GoldItemAnswer(many=True)
    pool = PoolAnswer()


class GoldStart(serializers.Serializer):
    caption = serializers.IntegerField(help_text="the caption to make a gold item (GET /api/studies/<slug>/captions/)")


class GoldList(APIView):
    """The study's gold items and the hidden checks' pool; POST makes a caption a gold item
    (its maker then makes the gold verdict in the workspace at the answer's `url`)."""

    permission_classes = [IsGoldMaker]

    @extend_schema(responses=GoldListAnswer)
    def get(self, request, slug):
        study = study_from_view(self)
        return Response(
            {
                "items": [gold.gold_item_row(item) for item in gold.gold_items(study)],
                "pool": gold.gold_pool_status(study),
            }
        )

    @extend_schema(request=GoldStart, responses={201: GoldItemAnswer, 400: Error, 409: Error})
    def post(self, request, slug):
        study = study_from_view(self)
        body = GoldStart(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            item = gold.gold_start(study=study, actor=request.user, caption_id=body.validated_data["caption"])
        except ServiceError as exc:
            refused(exc)
        return Response(gold.gold_item_row(item), status=status.HTTP_201_CREATED)


class GoldImportAnswer(serializers.Serializer):
    stored = serializers.IntegerField()
    items = GoldItemAnswer(many=True)


class GoldImport(APIView):
    """Gold verdicts from a JSON Lines file in the bundle's annotation format (one annotation per
    line, with `clip`, `model` alias or name, `annotator_pass`), made by you; all or nothing."""

    permission_classes = [IsStudyAdmin]
    parser_classes = [MultiPartParser, JSONParser]

    @extend_schema(
        request={
            "multipart/form-data": {"type": "object", "properties": {"file": {"type": "string", "format": "binary"}}}
        },
        responses={201: GoldImportAnswer, 400: Error},
    )
    def post(self, request, slug):
        study = study_from_view(self)
        upload = request.FILES.get("file")
        if upload is None:
            return Response(
                {"file": ["Attach the gold verdicts as a JSON Lines file."]}, status=status.HTTP_400_BAD_REQUEST
            )
        try:
            items = gold_import(study=study, actor=request.user, data=upload.read())
        except ServiceError as exc:
            refused(exc)
        return Response(
            {"stored": len(items), "items": [gold.gold_item_row(item) for item in items]},
            status=status.HTTP_201_CREATED,
        )


class PracticeSettings(serializers.Serializer):
    requires_qualification = serializers.BooleanField(help_text=study_settings.MEANINGS["requires_qualification"])
    practice_min_items = serializers.IntegerField(help_text=study_settings.MEANINGS["practice_min_items"])
    practice_min_overview_agreement = serializers.FloatField(
        help_text=study_settings.MEANINGS["practice_min_overview_agreement"]
    )
    practice_min_mode_f1 = serializers.FloatField(help_text=study_settings.MEANINGS["practice_min_mode_f1"])
    practice_min_window_agreement = serializers.FloatField(
        help_text=study_settings.MEANINGS["practice_min_window_agreement"]
    )
    gold_rate = serializers.FloatField(help_text=study_settings.MEANINGS["gold_rate"])
    gold_drift_threshold = serializers.FloatField(help_text=study_settings.MEANINGS["gold_drift_threshold"])


class PracticeAnswer(serializers.Serializer):
    practice_items = serializers.ListField(child=serializers.IntegerField())
    gold_items = GoldItemAnswer(many=True)
    settings = PracticeSettings()
    meanings = serializers.DictField(child=serializers.CharField())
    pool = PoolAnswer()


class PracticeChange(serializers.Serializer):
    """Any of the gold settings, and the practice set as gold item ids; each is checked again by
    the service (ranges, the pool, the set)."""

    practice_items = serializers.JSONField(required=False, help_text="gold item ids: the practice set")
    requires_qualification = serializers.JSONField(
        required=False, help_text=study_settings.MEANINGS["requires_qualification"]
    )
    practice_min_items = serializers.JSONField(required=False, help_text=study_settings.MEANINGS["practice_min_items"])
    practice_min_overview_agreement = serializers.JSONField(
        required=False, help_text=study_settings.MEANINGS["practice_min_overview_agreement"]
    )
    practice_min_mode_f1 = serializers.JSONField(
        required=False, help_text=study_settings.MEANINGS["practice_min_mode_f1"]
    )
    practice_min_window_agreement = serializers.JSONField(
        required=False, help_text=study_settings.MEANINGS["practice_min_window_agreement"]
    )
    gold_rate = serializers.JSONField(required=False, help_text=study_settings.MEANINGS["gold_rate"])
    gold_drift_threshold = serializers.JSONField(
        required=False, help_text=study_settings.MEANINGS["gold_drift_threshold"]
    )


class Practice(APIView):
    """The practice set, its pass rule and the gold settings; PATCH changes any of them (refused
    with the reason, nothing stored: a practice set of no gold, a rule outside its range, a gold
    rate the pool cannot serve)."""

    permission_classes = [IsStudyAdmin]

    @extend_schema(responses=PracticeAnswer)
    def get(self, request, slug):
        return Response(gold.practice_state(study_from_view(self)))

    @extend_schema(request=PracticeChange, responses={200: PracticeAnswer, 400: Error, 409: Error})
    def patch(self, request, slug):
        study = study_from_view(self)
        if not isinstance(request.data, dict):
            return Response({"detail": "Send the changes as a JSON object."}, status=status.HTTP_400_BAD_REQUEST)
        changes = dict(request.data)
        items = changes.pop("practice_items", None)
        try:
            study = gold.practice_configure(study=study, actor=request.user, practice_items=items, settings=changes)
        except ServiceError as exc:
            refused(exc)
        return Response(gold.practice_state(study))


class QualificationAnswer(serializers.Serializer):
    user = serializers.CharField()
    state = serializers.ChoiceField(choices=["not_started", "practising", "passed", "failed"])
    attempts = serializers.IntegerField()
    attempts_allowed = serializers.IntegerField()
    may_retry = serializers.BooleanField(help_text="an attempt is left to start")
    practice_items = serializers.IntegerField()
    decided_at = serializers.DateTimeField(allow_null=True)
    result = serializers.DictField(help_text="the last attempt's figures, rule and reasons")


class Qualifications(APIView):
    """Every annotator of the study with their practice result (study admins)."""

    permission_classes = [IsStudyAdmin]

    @extend_schema(responses=QualificationAnswer(many=True))
    def get(self, request, slug):
        return Response(gold.qualifications(study_from_view(self)))


class QualificationRetry(APIView):
    """Allow an annotator whose practice attempt failed one more attempt (study admins)."""

    permission_classes = [IsStudyAdmin]

    @extend_schema(request=None, responses={200: QualificationAnswer, 400: Error, 409: Error})
    def post(self, request, slug, username):
        study = study_from_view(self)
        user = get_user_model().objects.filter(username=username, memberships__study=study).first()
        if user is None:
            raise NotFound(f"{username} is not a member of this study.")
        try:
            qualification = gold.qualification_retry_allow(study=study, actor=request.user, user=user)
        except ServiceError as exc:
            refused(exc)
        return Response(gold.qualification_row(qualification, len(gold.practice_set(study))))


class MyQualification(APIView):
    """Your own practice: where you stand, and the last attempt's result (any member)."""

    permission_classes = [IsStudyMember]

    @extend_schema(responses=QualificationAnswer)
    def get(self, request, slug):
        study = study_from_view(self)
        qualification = gold.qualification_of(study, request.user)
        return Response(gold.qualification_row(qualification, len(gold.practice_set(study))))


class FeedbackAnswer(serializers.Serializer):
    annotation = serializers.IntegerField()
    attempt = serializers.IntegerField()
    comparison = serializers.DictField(
        help_text="overview, segmentation and window verdicts, yours and gold; modes matched, missed and added by unit"
    )
    overview = serializers.DictField(
        help_text="your corrected overview, the gold one, the redline from yours to gold and its edit size"
    )
    gold_windows = serializers.ListField(child=serializers.DictField())
    progress = serializers.DictField()
    finished = serializers.BooleanField()
    qualification = QualificationAnswer(allow_null=True)


class PracticeFeedback(APIView):
    """The feedback of a submitted practice item: your verdicts against the gold ones, the modes
    you missed or added, a redline from your correction to the gold one with its edit size; on
    the attempt's last item, passed or not and why (its annotator and the study's admins)."""

    @extend_schema(responses={200: FeedbackAnswer, 400: Error})
    def get(self, request, annotation_id):
        annotation = get_object_or_404(
            Annotation.objects.select_related("caption__clip__study", "caption__model", "annotator"), pk=annotation_id
        )
        study = annotation.caption.clip.study
        roles = user_roles(request.user, study)
        if not roles:
            raise NotFound("No such annotation.")
        require_study_work(request.user, study)
        if annotation.annotator_id != request.user.pk and Role.ADMIN not in roles:
            raise PermissionDenied("Only its annotator and the study's admins see a practice item's feedback.")
        if annotation.purpose != Annotation.Purpose.PRACTICE:
            raise NotFound("No such practice item.")
        try:
            return Response(gold.practice_feedback(annotation))
        except ServiceError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
