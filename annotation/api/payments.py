"""REST API of paying a study's crowd participants (its admins only, never site admins without
the role): the payment report as JSON and CSV, and the bonus at an hourly rate as JSON (to
check) and as the platform's bulk-bonus file (to upload). The platform ids are in these answers
only (annotation.services.payments), and each answer that holds them is recorded in the study's
history (``payments_read``: who, what, how many ids)."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.api.workflow_bodies import Error
from annotation.permissions import IsStudyAdmin, study_from_view
from annotation.rules.payments import RATE_MAX, RateProblem
from annotation.rules.recruitment import PARTICIPANT_STATES
from annotation.services import payments as service


class PaymentRowAnswer(serializers.Serializer):
    pseudonym = serializers.CharField()
    participant_id = serializers.CharField(allow_null=True, help_text="the platform's participant id; null when "
                                           "unknown (joined before ids were kept, or the site's secret changed)")
    link = serializers.IntegerField(help_text="the recruitment link they joined by")
    items_done = serializers.IntegerField(help_text="items submitted or further")
    items_assigned = serializers.IntegerField(help_text="items given")
    active_seconds = serializers.FloatField(help_text="active time of all their annotations in the study, as "
                                            "recorded (capped on each save), to 0.1 s")
    joined_at = serializers.DateTimeField()
    completed_at = serializers.DateTimeField(allow_null=True, help_text="when every item given was done")
    completion_seconds = serializers.FloatField(allow_null=True, help_text="completed_at - joined_at")
    state = serializers.ChoiceField(choices=PARTICIPANT_STATES,
                                    help_text="timed out: their time allowed passed before they completed")
    state_at = serializers.DateTimeField(allow_null=True, help_text="since when: completed_at, the end of their "
                                         "time allowed, or their withdrawal; null while working")
    gold_checks = serializers.IntegerField(allow_null=True, help_text="gold checks compared; null: the study "
                                           "has no gold items")
    gold_accuracy = serializers.FloatField(allow_null=True, help_text="share of gold checks whose overview "
                                           "verdict equals the gold one (null below the minimum or without gold)")


class PaymentAnswer(serializers.Serializer):
    has_gold = serializers.BooleanField(help_text="whether the study has gold items")
    columns = serializers.ListField(child=serializers.ListField(child=serializers.CharField()),
                                    help_text="[key, heading] of each column, in the CSV's order")
    participants = PaymentRowAnswer(many=True)


class BonusLineAnswer(serializers.Serializer):
    pseudonym = serializers.CharField()
    participant_id = serializers.CharField()
    active_seconds = serializers.FloatField()
    amount = serializers.CharField(help_text="rate × active hours, to the cent, half up (two decimals)")


class BonusAnswer(serializers.Serializer):
    rate = serializers.CharField(help_text="per hour of active time")
    rounding = serializers.CharField()
    lines = BonusLineAnswer(many=True)
    total = serializers.CharField()
    skipped = serializers.IntegerField(help_text="participants left out of the file")
    without_id = serializers.ListField(child=serializers.CharField(),
                                       help_text="pseudonyms left out: platform id unknown")
    nothing_due = serializers.ListField(child=serializers.CharField(),
                                        help_text="pseudonyms left out: the amount rounds to 0.00")
    file = serializers.CharField(help_text="the bulk-bonus file's text")


RATE = OpenApiParameter("rate", str, required=True,
                        description=f"money per hour of active time: above 0, at most {RATE_MAX}, two decimals "
                                    "at most (e.g. 9.50)")
CSV_OK = {(200, "text/csv"): OpenApiResponse(OpenApiTypes.STR)}


def _csv(text: str, filename: str, **headers: str) -> HttpResponse:
    response = HttpResponse(text, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    for name, value in headers.items():
        response[name] = value
    return response


def _bonus(request, study, read: str) -> service.Bonus:
    try:
        return service.payment_bonus_read(study=study, actor=request.user, rate=request.query_params.get("rate"),
                                          read=read)
    except RateProblem as exc:
        raise ValidationError({"rate": [str(exc)]}) from None


class Payments(APIView):
    """Per participant: pseudonym, platform id, items done, active time, completion time, gold
    accuracy (where the study has gold items)."""

    permission_classes = [IsStudyAdmin]

    @extend_schema(responses=PaymentAnswer)
    def get(self, request, slug):
        report = service.payment_report_read(study=study_from_view(self), actor=request.user, read=service.READ_JSON)
        return Response({"has_gold": report.has_gold, "columns": [list(c) for c in service.COLUMNS],
                         "participants": [service.row_values(row) for row in report.rows]})


class PaymentsCsv(APIView):
    """The payment report as CSV (the columns of the JSON, an unknown platform id as `unknown`)."""

    permission_classes = [IsStudyAdmin]

    @extend_schema(responses=CSV_OK)
    def get(self, request, slug):
        study = study_from_view(self)
        report = service.payment_report_read(study=study, actor=request.user, read=service.READ_CSV)
        return _csv(service.payments_csv(report), f"{study.slug}-payments.csv")


class BonusPreview(APIView):
    """The bonus of each participant at `rate` per hour of active time, who is left out and
    why, and the bulk-bonus file's text."""

    permission_classes = [IsStudyAdmin]

    @extend_schema(parameters=[RATE], responses={200: BonusAnswer, 400: Error})
    def get(self, request, slug):
        bonus = _bonus(request, study_from_view(self), service.READ_BONUS)
        return Response({
            "rate": f"{bonus.rate:.2f}", "rounding": "to the cent, half up",
            "lines": [{"pseudonym": line.pseudonym, "participant_id": line.participant_id,
                       "active_seconds": line.active_seconds, "amount": f"{line.amount:.2f}"} for line in bonus.lines],
            "total": f"{bonus.total:.2f}", "skipped": bonus.skipped, "without_id": bonus.without_id,
            "nothing_due": bonus.nothing_due, "file": bonus.file,
        })


class BonusFile(APIView):
    """The bulk-bonus file at `rate`: `participant_id,amount` lines, no header (Prolific's
    layout). The header Redline-Skipped says how many participants were left out."""

    permission_classes = [IsStudyAdmin]

    @extend_schema(parameters=[RATE], responses={**CSV_OK, 400: Error})
    def get(self, request, slug):
        study = study_from_view(self)
        bonus = _bonus(request, study, service.READ_BONUS_FILE)
        return _csv(bonus.file, f"{study.slug}-bonus.csv", **{"Redline-Skipped": str(bonus.skipped)})
