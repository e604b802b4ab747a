"""REST API of a study's guidelines (annotation.services.guidelines): read by every member (and
site admins), written by the study's admins, versioned, with the diff between two versions and
the notice each person dismisses."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.api.studies import refused
from annotation.errors import ServiceError
from annotation.models import GuidelineVersion
from annotation.permissions import IsStudyMember, Role, readable_study_from_view, study_from_view, user_roles
from annotation.rules import guidelines as text_rules
from annotation.services import guidelines as service

WRITE_REFUSAL = "Only the study's admins write its guidelines."


class ExampleBody(serializers.Serializer):
    mode = serializers.CharField(max_length=100, help_text="a failure mode's key in the study's taxonomy")
    excerpt = serializers.CharField(max_length=20_000, allow_blank=True, trim_whitespace=False,
                                    help_text="the part of a caption that shows the mode")
    correction = serializers.CharField(max_length=20_000, allow_blank=True, required=False, trim_whitespace=False,
                                       help_text="the excerpt corrected")
    why = serializers.CharField(max_length=20_000, allow_blank=True, required=False, trim_whitespace=False,
                                help_text="why this mode applies (and not another)")


class ExampleAnswer(ExampleBody):
    mode_name = serializers.CharField()


class GuidelinesBody(serializers.Serializer):
    """The whole guidelines: each write replaces the text and the examples together."""

    # Longer texts than the limit reach the service, whose message names the limit in bytes.
    text = serializers.CharField(allow_blank=True, trim_whitespace=False,
                                 help_text=f"Markdown, at most {text_rules.TEXT_MAX_BYTES:,} bytes (UTF-8); "
                                           "raw HTML is shown as text, never run")
    examples = serializers.ListField(child=serializers.DictField(), required=False, default=list,
                                     help_text=f"at most {text_rules.EXAMPLES_MAX} examples "
                                               "{mode, excerpt, correction, why}, each text at most "
                                               f"{text_rules.EXAMPLE_FIELD_MAX:,} characters")


class VersionAnswer(serializers.Serializer):
    version = serializers.IntegerField()
    text = serializers.CharField(help_text="the Markdown as written")
    html = serializers.CharField(help_text="the Markdown rendered and sanitised: safe to insert into a page")
    examples = ExampleAnswer(many=True)
    created_by = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField(help_text="later than created_at where a draft was replaced in setup")


class VersionSummary(serializers.Serializer):
    version = serializers.IntegerField()
    created_by = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    bytes = serializers.IntegerField()
    examples = serializers.IntegerField()


class DiffOp(serializers.Serializer):
    op = serializers.ChoiceField(choices=["equal", "insert", "delete"])
    text = serializers.CharField(help_text="plain text: escape it to show it")


class DiffAnswer(serializers.Serializer):
    # "from" is a Python keyword: the field is declared below under its name.
    to = serializers.IntegerField()
    ops = DiffOp(many=True)
    words_added = serializers.IntegerField()
    words_removed = serializers.IntegerField()

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = serializers.IntegerField(allow_null=True, help_text="null: from nothing")
        return fields


class NoticeAnswer(DiffAnswer):
    kind = serializers.ChoiceField(choices=["new", "updated"],
                                   help_text="new: never read; updated: newer than the version last read")


class GuidelinesAnswer(serializers.Serializer):
    current = VersionAnswer(allow_null=True)
    versions = VersionSummary(many=True)
    notice = NoticeAnswer(allow_null=True, help_text="for the caller, while the study runs")
    limits = serializers.DictField(child=serializers.IntegerField())


class SaveAnswer(VersionAnswer):
    created = serializers.BooleanField(help_text="a new version was made (false: the draft in setup was "
                                                 "replaced, or nothing changed)")


class DismissBody(serializers.Serializer):
    version = serializers.IntegerField(help_text="the guideline version read")


class DismissAnswer(serializers.Serializer):
    version = serializers.IntegerField(help_text="the newest version dismissed")


LIMITS = {"text_max_bytes": text_rules.TEXT_MAX_BYTES, "examples_max": text_rules.EXAMPLES_MAX,
          "example_field_max": text_rules.EXAMPLE_FIELD_MAX}


def _summary(version: GuidelineVersion) -> dict:
    author = version.created_by.get_username() if version.created_by_id else None
    return {"version": version.number, "created_by": author, "created_at": version.created_at,
            "bytes": len(version.text.encode("utf-8")),
            "examples": len(version.examples)}


def _version_of(study, number: int) -> GuidelineVersion:
    version = GuidelineVersion.objects.filter(study=study, number=number).select_related("created_by", "study").first()
    if version is None:
        raise NotFound(f"Study {study.name} has no guideline version {number}.")
    return version


class Guidelines(APIView):
    """The study's guidelines: the current version (Markdown, sanitised HTML, failure-mode
    examples), every version, and the caller's notice of a newer version. PUT or POST writes
    them (study admins): in setup it replaces the draft, once running it makes a new version."""

    @extend_schema(responses=GuidelinesAnswer)
    def get(self, request, slug):
        study = readable_study_from_view(self, request.user)
        versions = list(GuidelineVersion.objects.filter(study=study).select_related("created_by", "study")
                        .order_by("number"))
        return Response({
            "current": service.guideline_view(versions[-1]) if versions else None,
            "versions": [_summary(v) for v in versions],
            "notice": service.guidelines_notice(study=study, user=request.user),
            "limits": LIMITS,
        })

    @extend_schema(request=GuidelinesBody, responses={200: SaveAnswer, 201: SaveAnswer})
    def put(self, request, slug):
        study = readable_study_from_view(self, request.user)
        if Role.ADMIN not in user_roles(request.user, study):
            raise PermissionDenied(WRITE_REFUSAL)
        body = GuidelinesBody(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            version, created = service.guidelines_save(study=study, actor=request.user, **body.validated_data)
        except ServiceError as exc:
            refused(exc)
        return Response({**service.guideline_view(version), "created": created},
                        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    @extend_schema(request=GuidelinesBody, responses={200: SaveAnswer, 201: SaveAnswer})
    def post(self, request, slug):
        return self.put(request, slug)


class GuidelineVersionDetail(APIView):
    """One version of the study's guidelines."""

    @extend_schema(responses=VersionAnswer, operation_id="studies_guidelines_version_retrieve")
    def get(self, request, slug, number):
        study = readable_study_from_view(self, request.user)
        return Response(service.guideline_view(_version_of(study, number)))


class GuidelinesDiff(APIView):
    """How version `to` (default: the current one) differs from version `from` (default: the one
    before it): the text and the examples, word by word within the lines that changed."""

    @extend_schema(parameters=[OpenApiParameter("from", int), OpenApiParameter("to", int)],
                   responses=DiffAnswer)
    def get(self, request, slug):
        study = readable_study_from_view(self, request.user)

        def number(name: str) -> int | None:
            raw = request.query_params.get(name)
            if raw in (None, ""):
                return None
            try:
                return int(raw)
            except ValueError:
                raise ValidationError({name: [f"A version number, not {raw!r:.20}."]}) from None

        to_number, from_number = number("to"), number("from")
        current = service.guidelines_current(study)
        if current is None:
            raise NotFound(f"Study {study.name} has no guidelines yet.")
        new = _version_of(study, to_number) if to_number is not None else current
        if from_number is None:
            from_number = new.number - 1
        old = _version_of(study, from_number) if from_number >= 1 else None
        return Response(service.guidelines_diff(study=study, old=old, new=new))


class GuidelinesDismiss(APIView):
    """The caller read the guidelines up to `version`: its notice is not shown again."""

    permission_classes = [IsStudyMember]

    @extend_schema(request=DismissBody, responses=DismissAnswer)
    def post(self, request, slug):
        study = study_from_view(self)
        body = DismissBody(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            number = service.guideline_notice_dismiss(study=study, user=request.user,
                                                      version=body.validated_data["version"])
        except ServiceError as exc:
            refused(exc)
        return Response({"version": number})
