"""REST API of how a study's people worked: the annotator quality table and the work log.

Study admins read people by name, researchers by pseudonym (annotation.permissions.sees_people);
models are named only to whom `sees_model_identity` allows. Both are read-only.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.errors import FieldErrors, ServiceError
from annotation.permissions import ReadsPeopleWork, sees_model_identity, sees_people, study_from_view
from annotation.rules.gold_agreement import MIN_ITEMS
from annotation.selectors.annotator_quality import COLUMNS, annotator_quality, row_values
from annotation.selectors.queues import page_size
from annotation.selectors.work_log import WORK_ACTIONS, people_of, work_log


class QualityRowAnswer(serializers.Serializer):
    person = serializers.CharField(help_text="the annotator: a username for study admins, a pseudonym for researchers")
    items_done = serializers.IntegerField(help_text="annotations submitted at least once (undone ones not counted)")
    approved = serializers.IntegerField(help_text="QC decisions on their work: approved as is")
    amended = serializers.IntegerField(help_text="QC decisions: amended and approved")
    returned = serializers.IntegerField(help_text="QC decisions: returned")
    approved_rate = serializers.FloatField(allow_null=True, help_text="share of decisions; null below the minimum")
    amended_rate = serializers.FloatField(allow_null=True)
    return_rate = serializers.FloatField(allow_null=True)
    amendment_words = serializers.FloatField(allow_null=True, help_text="mean words a reviewer's amendment changed")
    active_seconds = serializers.FloatField(allow_null=True, help_text="median active seconds per item done")
    double_items = serializers.IntegerField(help_text="items this annotator and another submitted")
    peer_agreement = serializers.FloatField(allow_null=True, help_text="overview verdicts equal to another's")
    peer_kappa = serializers.FloatField(allow_null=True, help_text="Cohen's kappa of those overview verdicts")
    notes = serializers.CharField(help_text="why a cell is blank")


class QualityAnswer(serializers.Serializer):
    minimum_items = serializers.IntegerField(help_text="no rate over fewer items")
    columns = serializers.ListField(child=serializers.ListField(child=serializers.CharField()))
    annotators = QualityRowAnswer(many=True)


def quality_answer(request, study) -> dict:
    people = people_of(study, by_name=sees_people(request.user, study))
    return {
        "minimum_items": MIN_ITEMS,
        "columns": [list(column) for column in COLUMNS],
        "annotators": [row_values(row) for row in annotator_quality(study=study, people=people)],
    }


class AnnotatorQuality(APIView):
    """Per annotator: items done, QC outcomes, active time, agreement with other annotators."""

    permission_classes = [ReadsPeopleWork]

    @extend_schema(responses=QualityAnswer)
    def get(self, request, slug):
        return Response(quality_answer(request, study_from_view(self)))


class WorkLogEntry(serializers.Serializer):
    id = serializers.IntegerField()
    at = serializers.DateTimeField()
    person = serializers.CharField(help_text="who acted: a username for study admins, a pseudonym for researchers")
    action = serializers.ChoiceField(choices=WORK_ACTIONS)
    summary = serializers.CharField()
    annotation = serializers.IntegerField(allow_null=True)
    annotator = serializers.CharField(help_text="whose annotation it is (empty for an assignment)")
    purpose = serializers.CharField(help_text="what the annotation is for: work, gold, practice, gold_check "
                                    "(empty for an assignment)")
    clip = serializers.CharField()
    model = serializers.CharField(help_text="the model's name, or its alias to whom works blind")


class WorkLogPage(serializers.Serializer):
    entries = WorkLogEntry(many=True)
    next = serializers.CharField(allow_null=True, help_text="pass as `before` for the next (older) page")


WORK_LOG_PARAMETERS = [
    OpenApiParameter("person", str, description="who acted (as this page shows people)"),
    OpenApiParameter("clip", str, description="the clip's name"),
    OpenApiParameter("action", str, enum=list(WORK_ACTIONS)),
    OpenApiParameter("before", str, description="the previous page's `next`"),
    OpenApiParameter("limit", int, description="entries per page"),
]


def work_log_answer(request, study) -> dict:
    params = request.query_params if hasattr(request, "query_params") else request.GET
    try:
        limit = page_size(params.get("limit"))
    except ServiceError as exc:
        raise ValidationError({"limit": [str(exc).removeprefix("limit ")]}) from None
    people = people_of(study, by_name=sees_people(request.user, study))
    try:
        return work_log(
            study=study, people=people, names=sees_model_identity(request.user, study),
            person=params.get("person", ""), clip=params.get("clip", ""), action=params.get("action", ""),
            before=params.get("before"), limit=limit,
        )
    except FieldErrors as exc:
        raise ValidationError({field: [message] for field, message in exc.errors.items()}) from None


class WorkLog(APIView):
    """Who assigned, opened, submitted, reviewed (approved, amended, returned) or undid what and
    when, newest first; filter by person, clip and action."""

    permission_classes = [ReadsPeopleWork]

    @extend_schema(parameters=WORK_LOG_PARAMETERS, responses=WorkLogPage)
    def get(self, request, slug):
        return Response(work_log_answer(request, study_from_view(self)))
