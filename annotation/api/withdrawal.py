"""REST API of withdrawal (annotation.services.withdrawal): an annotator of a study withdraws
from it (and may ask for their annotations to be erased); a study admin lists the withdrawals
by pseudonym, with how many annotations each excludes."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.api.workflow_bodies import Error
from annotation.permissions import IsStudyAdmin, IsStudyMember, study_from_view
from annotation.services import withdrawal as service
from annotation.services.annotation_common import NotAllowed


class WithdrawBody(serializers.Serializer):
    erase = serializers.BooleanField(required=False, default=False,
                                     help_text="also erase the content of my annotations (the study may erase "
                                               "them whatever this says: its erase_on_withdrawal setting)")


class WithdrawalAnswer(serializers.Serializer):
    withdrawn = serializers.BooleanField(help_text="whether you have withdrawn from the study")
    at = serializers.DateTimeField(allow_null=True)
    released = serializers.IntegerField(help_text="your waiting items given back to the pool")
    erase_requested = serializers.BooleanField()
    erased_at = serializers.DateTimeField(allow_null=True, help_text="when your annotations' content was erased")
    erased = serializers.IntegerField(help_text="annotations whose content was erased")
    erase_on_withdrawal = serializers.BooleanField(help_text="the study erases on withdrawal, whatever is asked")
    may_withdraw = serializers.BooleanField(help_text="whether you may withdraw now (an annotator of the study)")


class WithdrawalRowAnswer(serializers.Serializer):
    pseudonym = serializers.CharField(help_text="the participant's pseudonym, or the member's username")
    at = serializers.DateTimeField()
    released = serializers.IntegerField()
    excluded = serializers.IntegerField(help_text="their annotations of the study's work, submitted once, that no "
                                                  "longer count")
    erase_requested = serializers.BooleanField()
    erased_at = serializers.DateTimeField(allow_null=True)
    erased = serializers.IntegerField()


def _answer(study, user) -> dict:
    found = service.withdrawal_of(study=study, user=user)
    return {
        "withdrawn": found is not None, "at": found.at if found else None,
        "released": found.released if found else 0, "erase_requested": bool(found and found.erase_requested),
        "erased_at": found.erased_at if found else None, "erased": found.erased if found else 0,
        "erase_on_withdrawal": study.erase_on_withdrawal,
        "may_withdraw": found is None and service.may_withdraw(study, user),
    }


class Withdraw(APIView):
    """GET: whether you have withdrawn from the study. POST: withdraw (at once: your waiting items
    go back to the pool, your annotations stop counting; with `erase`, their content is erased).
    Withdrawing again changes nothing, but may ask for the erasure not asked the first time. 403
    for a member who does not annotate in the study; 409 for an erasure an archived study refuses."""

    permission_classes = [IsStudyMember]

    @extend_schema(responses=WithdrawalAnswer)
    def get(self, request, slug):
        return Response(_answer(study_from_view(self), request.user))

    @extend_schema(request=WithdrawBody, responses={200: WithdrawalAnswer, 403: Error, 409: Error})
    def post(self, request, slug):
        study = study_from_view(self)
        body = WithdrawBody(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            service.participation_withdraw(study=study, user=request.user, erase=body.validated_data["erase"])
        except NotAllowed as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_403_FORBIDDEN)
        study.refresh_from_db()
        return Response(_answer(study, request.user))


class WithdrawalList(APIView):
    """The study's withdrawals by time (study admins): who by pseudonym, when, how many items
    went back, how many annotations no longer count, whether their content was erased."""

    permission_classes = [IsStudyAdmin]

    @extend_schema(responses=WithdrawalRowAnswer(many=True))
    def get(self, request, slug):
        return Response([row.__dict__ for row in service.withdrawals_list(study=study_from_view(self))])
