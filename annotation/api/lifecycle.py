"""REST API of a study's lifecycle (annotation.services.lifecycle): where it stands, and the
moves start, close (with confirmation) and archive. Study admins only; every move is audited."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.errors import ServiceError
from annotation.permissions import IsStudyAdmin, study_from_view
from annotation.services.annotation_common import NotAllowed
from annotation.services.lifecycle import (
    NeedsConfirmation,
    NotReady,
    StartNeedsConfirmation,
    lifecycle_status,
    study_archive,
    study_close,
    study_start,
)


class ReadinessEntry(serializers.Serializer):
    key = serializers.CharField(help_text="names the place that fixes it")
    label = serializers.CharField()
    done = serializers.BooleanField()
    detail = serializers.CharField()
    blocking = serializers.BooleanField(help_text="false: not done asks for confirm instead of refusing")


class LifecycleStatus(serializers.Serializer):
    state = serializers.ChoiceField(choices=["setup", "running", "closed", "archived"])
    label = serializers.CharField()
    next = serializers.ListField(child=serializers.CharField(), help_text="the moves open now")
    readiness = ReadinessEntry(many=True, required=False, help_text="in setup: what starting needs")
    unfinished = serializers.DictField(child=serializers.IntegerField(), required=False,
                                       help_text="running or closed: what is not finished, by kind")


class LifecycleRefusal(serializers.Serializer):
    detail = serializers.CharField()
    missing = ReadinessEntry(many=True, required=False, help_text="start: the items not done")
    unfinished = serializers.DictField(child=serializers.IntegerField(), required=False,
                                       help_text="close without confirm: what is unfinished")
    confirm = ReadinessEntry(required=False, help_text="start without confirm: the captions with no annotator")


class StartBody(serializers.Serializer):
    confirm = serializers.BooleanField(default=False,
                                       help_text="true: start although some captions have no annotator")


class CloseBody(serializers.Serializer):
    confirm = serializers.BooleanField(default=False, help_text="true: close, having seen what is unfinished")


class StudyLifecycle(APIView):
    """Where the study stands in its lifecycle (setup, running, closed, archived)."""

    permission_classes = [IsStudyAdmin]

    @extend_schema(responses=LifecycleStatus)
    def get(self, request, slug):
        return Response(lifecycle_status(study_from_view(self)))


REFUSALS = {200: LifecycleStatus, 400: LifecycleRefusal, 403: LifecycleRefusal, 409: LifecycleRefusal}


class StudyMove(APIView):
    """A move of the study; answers where it stands after it. 409 when the study is not in the
    state the move starts from."""

    permission_classes = [IsStudyAdmin]

    def run(self, request, study) -> None:
        raise NotImplementedError

    def post(self, request, slug):
        study = study_from_view(self)
        try:
            self.run(request, study)
        except NotReady as refusal:
            return Response({"detail": str(refusal), "missing": [item.as_dict() for item in refusal.missing]},
                            status=status.HTTP_400_BAD_REQUEST)
        except NeedsConfirmation as refusal:
            return Response({"detail": str(refusal), "unfinished": refusal.unfinished},
                            status=status.HTTP_400_BAD_REQUEST)
        except StartNeedsConfirmation as refusal:
            return Response({"detail": str(refusal), "confirm": refusal.item.as_dict()},
                            status=status.HTTP_400_BAD_REQUEST)
        except NotAllowed as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_403_FORBIDDEN)
        except ServiceError as exc:  # not a move from the study's state
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(lifecycle_status(study))


class StudyStart(StudyMove):
    """Start the study (setup -> running); refused (400) with the readiness items missing, and
    (400, with `confirm`: the unassigned captions' item) while captions have no annotator,
    unless the body confirms."""

    @extend_schema(request=StartBody, responses=REFUSALS)
    def post(self, request, slug):
        return super().post(request, slug)

    def run(self, request, study) -> None:
        body = StartBody(data=request.data)
        body.is_valid(raise_exception=True)
        study_start(study=study, actor=request.user, confirm=body.validated_data["confirm"])


class StudyClose(StudyMove):
    """Close the study (running -> closed): all annotation and review stops and the final
    profile is built. Without `confirm: true`, refused (400) with what is unfinished."""

    @extend_schema(request=CloseBody, responses=REFUSALS)
    def post(self, request, slug):
        return super().post(request, slug)

    def run(self, request, study) -> None:
        body = CloseBody(data=request.data)
        body.is_valid(raise_exception=True)
        study_close(study=study, actor=request.user, confirm=body.validated_data["confirm"])


class StudyArchive(StudyMove):
    """Archive the study (closed -> archived): hidden from the lists, still exportable."""

    @extend_schema(request=None, responses=REFUSALS)
    def post(self, request, slug):
        return super().post(request, slug)

    def run(self, request, study) -> None:
        study_archive(study=study, actor=request.user)
