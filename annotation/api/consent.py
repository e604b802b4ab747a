"""REST API of a study's consent (annotation.services.consent): read by every member (and site
admins), written by the study's admins, versioned like the guidelines; members accept the
current version here or on the study's consent page."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.api.studies import refused
from annotation.errors import ServiceError
from annotation.models import ConsentVersion
from annotation.permissions import IsStudyMember, Role, readable_study_from_view, study_from_view, user_roles
from annotation.rules import consent as consent_rules
from annotation.services import consent as service

WRITE_REFUSAL = "Only the study's admins write its consent text."


class ConsentBody(serializers.Serializer):
    # Longer texts than the limit reach the service, whose message names the limit in bytes.
    text = serializers.CharField(allow_blank=True, trim_whitespace=False,
                                 help_text=f"Markdown, at most {consent_rules.TEXT_MAX_BYTES:,} bytes (UTF-8); "
                                           "raw HTML is shown as text, never run; empty: no consent asked")


class ConsentVersionAnswer(serializers.Serializer):
    version = serializers.IntegerField()
    text = serializers.CharField(help_text="the Markdown as written")
    html = serializers.CharField(help_text="the Markdown rendered and sanitised: safe to insert into a page")
    created_by = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField(help_text="later than created_at where a draft was replaced in setup")


class ConsentVersionSummary(serializers.Serializer):
    version = serializers.IntegerField()
    created_by = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    bytes = serializers.IntegerField()


class Accepted(serializers.Serializer):
    version = serializers.IntegerField()
    accepted_at = serializers.DateTimeField()


class ConsentAnswer(serializers.Serializer):
    current = ConsentVersionAnswer(allow_null=True, help_text="null before any was written")
    asked = serializers.BooleanField(help_text="the study asks for consent (its current text is not empty)")
    versions = ConsentVersionSummary(many=True)
    mine = Accepted(allow_null=True, help_text="the newest version the caller accepted")
    due = serializers.IntegerField(allow_null=True, help_text="the version the caller must accept before work")
    limits = serializers.DictField(child=serializers.IntegerField())


class ConsentSaveAnswer(ConsentVersionAnswer):
    created = serializers.BooleanField(help_text="a new version was made (false: the draft in setup was "
                                                 "replaced, or nothing changed)")


class AcceptBody(serializers.Serializer):
    version = serializers.IntegerField(help_text="the consent version read and accepted (the current one)")


def _summary(version: ConsentVersion) -> dict:
    return {"version": version.number,
            "created_by": version.created_by.get_username() if version.created_by_id else None,
            "created_at": version.created_at, "bytes": len(version.text.encode("utf-8"))}


class Consent(APIView):
    """The study's consent text: the current version (Markdown and sanitised HTML), every
    version, what the caller accepted and must accept. PUT writes it (study admins): in setup it
    replaces the draft, once running it makes a new version, which everyone accepts before more
    work."""

    @extend_schema(responses=ConsentAnswer)
    def get(self, request, slug):
        study = readable_study_from_view(self, request.user)
        versions = list(ConsentVersion.objects.filter(study=study).select_related("created_by", "study")
                        .order_by("number"))
        mine = service.consent_of(study, request.user)
        due = service.consent_due(study, request.user)
        return Response({
            "current": service.consent_view(versions[-1]) if versions else None,
            "asked": service.consent_asked(study) is not None,
            "versions": [_summary(v) for v in versions],
            "mine": {"version": mine.number, "accepted_at": mine.accepted_at} if mine else None,
            "due": due.number if due else None,
            "limits": {"text_max_bytes": consent_rules.TEXT_MAX_BYTES},
        })

    @extend_schema(request=ConsentBody, responses={200: ConsentSaveAnswer, 201: ConsentSaveAnswer})
    def put(self, request, slug):
        study = readable_study_from_view(self, request.user)
        if Role.ADMIN not in user_roles(request.user, study):
            raise PermissionDenied(WRITE_REFUSAL)
        body = ConsentBody(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            version, created = service.consent_save(study=study, actor=request.user, **body.validated_data)
        except ServiceError as exc:
            refused(exc)
        return Response({**service.consent_view(version), "created": created},
                        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class ConsentAccept(APIView):
    """The caller (a member) accepts the current version of the study's consent, while it runs."""

    permission_classes = [IsStudyMember]

    @extend_schema(request=AcceptBody, responses={201: Accepted})
    def post(self, request, slug):
        study = study_from_view(self)
        body = AcceptBody(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            record = service.consent_accept(study=study, user=request.user, version=body.validated_data["version"])
        except ServiceError as exc:
            refused(exc)
        return Response({"version": record.number, "accepted_at": record.accepted_at},
                        status=status.HTTP_201_CREATED)
