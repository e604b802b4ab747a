"""REST API: thin views that parse input, call one service and serialise the result."""

from __future__ import annotations

import tempfile
from pathlib import Path

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import generics, serializers, status
from rest_framework.exceptions import APIException
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.api.serializers import (
    CandidateModelSerializer,
    CaptionImportJobSerializer,
    CaptionSerializer,
    ClipSerializer,
)
from annotation.errors import ImportRefused, ServiceError
from annotation.interchange.limits import too_large
from annotation.media import video as media
from annotation.models import Caption, CaptionImportJob, Clip
from annotation.permissions import (
    IsStudyAdmin,
    IsStudyMember,
    SeesStudyWork,
    sees_every_caption,
    sees_model_identity,
    study_from_view,
)
from annotation.services.caption_jobs import caption_import_job_create, caption_import_jobs_recover
from annotation.services.captions import (
    REFERENCE_FORMATS,
    captions_import_clip_cc,
    captions_import_jsonl,
    references_import,
)
from annotation.services.clips import clip_import_file, clip_properties_import

UploadSerializer = inline_serializer("Upload", {"file": serializers.FileField()})


class ImportRefusal(serializers.Serializer):
    """A refused import lists every error; a refused request (a bad parameter) only says why."""

    detail = serializers.CharField()
    errors = serializers.ListField(child=serializers.CharField(), required=False,
                                   help_text="line, field, reason")


class PropertiesImported(serializers.Serializer):
    stored = serializers.IntegerField()
    detail = serializers.CharField()


class CaptionsImported(PropertiesImported):
    kept_invalid = serializers.IntegerField()
    models_created = serializers.ListField(child=serializers.CharField())
    errors = serializers.ListField(child=serializers.CharField(),
                                   help_text="schema errors of the captions kept invalid")


class ReferencesImported(PropertiesImported):
    already_present = serializers.IntegerField()


def refused(exc: ImportRefused) -> Response:
    return Response(
        {"detail": f"{len(exc.errors)} error(s); nothing was stored.", "errors": exc.errors},
        status=status.HTTP_400_BAD_REQUEST,
    )


class FileTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "file_too_large"


TooLarge = inline_serializer("TooLarge", {"detail": serializers.CharField()})
# Multipart framing around the file: boundaries, headers, a field or two.
MULTIPART_SLACK_BYTES = 64 * 1024


def uploaded_file(request):
    """The import file (multipart field ``file``); refused with 413 naming the limit when it is
    larger than ``MAX_IMPORT_FILE_MB``, before the body is read when its length says so."""
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    problem = too_large("The upload", length, slack=MULTIPART_SLACK_BYTES)
    if problem:
        raise FileTooLarge(problem)
    upload = request.FILES.get("file")
    if upload is None:
        raise serializers.ValidationError({"file": "Attach the file as multipart field 'file'."})
    problem = too_large(Path(upload.name or "The file").name, upload.size)
    if problem:
        raise FileTooLarge(problem)
    return upload


def uploaded_bytes(request) -> bytes:
    return uploaded_file(request).read()


def keeps_invalid(request) -> bool:
    return request.query_params.get("keep_invalid", "").lower() in {"1", "true", "yes"}


# The query parameters of a caption file import, at once or as a job.
CAPTION_IMPORT_PARAMETERS = [
    OpenApiParameter("format", str, enum=["jsonl", "clip-cc"]),
    OpenApiParameter("model", str, description="model name for clip-cc files"),
    OpenApiParameter("keep_invalid", bool),
]


class StudyContextMixin:
    def get_serializer_context(self):
        context = super().get_serializer_context()
        study = study_from_view(self)
        context["sees_identity"] = sees_model_identity(self.request.user, study)
        context["sees_every_caption"] = sees_every_caption(self.request.user, study)
        return context


class ClipList(StudyContextMixin, generics.ListAPIView):
    permission_classes = [IsStudyMember, SeesStudyWork]
    serializer_class = ClipSerializer

    def get_queryset(self):
        return Clip.objects.filter(study=study_from_view(self))


class ClipUpload(APIView):
    permission_classes = [IsStudyAdmin]
    parser_classes = [MultiPartParser]

    @extend_schema(request=UploadSerializer, responses={201: ClipSerializer})
    def post(self, request, slug):
        study = study_from_view(self)
        upload = request.FILES.get("file")
        if upload is None:
            raise serializers.ValidationError({"file": "Attach the video as multipart field 'file'."})
        name = Path(upload.name).name
        with tempfile.TemporaryDirectory(prefix="redline-upload-") as folder:
            path = Path(folder) / name
            with path.open("wb") as handle:
                for chunk in upload.chunks():
                    handle.write(chunk)
            try:
                clip = clip_import_file(study=study, path=path)
            except (media.MediaError, ServiceError) as exc:
                return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(ClipSerializer(clip).data, status=status.HTTP_201_CREATED)


class ClipPropertiesImport(APIView):
    permission_classes = [IsStudyAdmin]
    parser_classes = [MultiPartParser]

    @extend_schema(
        request=UploadSerializer, responses={200: PropertiesImported, 400: ImportRefusal, 413: TooLarge}
    )
    def post(self, request, slug):
        study = study_from_view(self)
        try:
            count = clip_properties_import(study=study, data=uploaded_bytes(request))
        except ImportRefused as exc:
            return refused(exc)
        return Response({"stored": count, "detail": f"Updated {count} clip(s)."})


class CandidateModelList(StudyContextMixin, generics.ListAPIView):
    permission_classes = [IsStudyMember, SeesStudyWork]
    serializer_class = CandidateModelSerializer
    pagination_class = None

    def get_queryset(self):
        return study_from_view(self).candidate_models.all()


class CaptionList(StudyContextMixin, generics.ListAPIView):
    permission_classes = [IsStudyMember, SeesStudyWork]
    serializer_class = CaptionSerializer

    @extend_schema(parameters=[OpenApiParameter("clip", str, description="only this clip's captions")])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        captions = (
            Caption.objects.filter(clip__study=study_from_view(self))
            .select_related("clip", "model")
            .prefetch_related("windows")
        )
        if not sees_every_caption(self.request.user, study_from_view(self)):
            # Annotators see the captions assigned to them, nothing else (see sees_every_caption).
            captions = captions.filter(annotations__annotator=self.request.user)
        clip = self.request.query_params.get("clip")
        return captions.filter(clip__name=clip) if clip else captions


class CaptionImport(APIView):
    permission_classes = [IsStudyAdmin]
    parser_classes = [MultiPartParser]

    @extend_schema(
        request=UploadSerializer,
        parameters=CAPTION_IMPORT_PARAMETERS,
        responses={201: CaptionsImported, 400: ImportRefusal, 413: TooLarge},
    )
    def post(self, request, slug):
        study = study_from_view(self)
        data = uploaded_bytes(request)
        keep_invalid = keeps_invalid(request)
        try:
            if request.query_params.get("format", "jsonl") == "clip-cc":
                model = request.query_params.get("model") or Path(request.FILES["file"].name).stem
                report = captions_import_clip_cc(
                    study=study, data=data, model=model, keep_invalid=keep_invalid
                )
            else:
                report = captions_import_jsonl(study=study, data=data, keep_invalid=keep_invalid)
        except ImportRefused as exc:
            return refused(exc)
        return Response(
            {
                "stored": report.stored,
                "kept_invalid": report.kept_invalid,
                "models_created": report.models_created,
                "errors": report.errors,
                "detail": f"Stored {report.stored} caption(s).",
            },
            status=status.HTTP_201_CREATED,
        )


class CaptionImportJobViews:
    """The study's caption import jobs, for its admins. Whoever looks sees a job whose process
    died sent again or failed, not running forever."""

    permission_classes = [IsStudyAdmin]
    serializer_class = CaptionImportJobSerializer

    def get_queryset(self):
        return CaptionImportJob.objects.filter(study=study_from_view(self)).select_related(
            "study", "requested_by")

    def get(self, request, *args, **kwargs):
        caption_import_jobs_recover(study=study_from_view(self))
        return super().get(request, *args, **kwargs)


class CaptionImportJobs(CaptionImportJobViews, generics.ListAPIView):
    """GET: the study's caption import jobs, newest first. POST: import a caption file in a
    background job; the answer (202) gives the job's URL to follow its progress."""

    @extend_schema(
        request=UploadSerializer,
        parameters=CAPTION_IMPORT_PARAMETERS,
        responses={202: CaptionImportJobSerializer, 400: ImportRefusal, 413: TooLarge},
    )
    def post(self, request, slug):
        study = study_from_view(self)
        upload = uploaded_file(request)
        try:
            job = caption_import_job_create(
                study=study,
                upload=upload,
                file_name=upload.name or "",
                format=request.query_params.get("format", "jsonl"),
                model=request.query_params.get("model", ""),
                keep_invalid=keeps_invalid(request),
                requested_by=request.user,
            )
        except ServiceError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        job.refresh_from_db()  # queued, or already finished by an eager task
        answer = CaptionImportJobSerializer(job).data
        return Response(answer, status=status.HTTP_202_ACCEPTED, headers={"Location": answer["url"]})


class CaptionImportJobDetail(CaptionImportJobViews, generics.RetrieveAPIView):
    lookup_url_kwarg = "job_id"


class ReferenceImport(APIView):
    permission_classes = [IsStudyAdmin]
    parser_classes = [MultiPartParser]

    @extend_schema(
        request=UploadSerializer,
        parameters=[
            OpenApiParameter("format", str, enum=list(REFERENCE_FORMATS)),
            OpenApiParameter("language", str),
        ],
        responses={201: ReferencesImported, 400: ImportRefusal, 413: TooLarge},
    )
    def post(self, request, slug):
        study = study_from_view(self)
        data = uploaded_bytes(request)
        try:
            report = references_import(
                study=study,
                data=data,
                format=request.query_params.get("format", "jsonl"),
                language=request.query_params.get("language", "en"),
            )
        except ImportRefused as exc:
            return refused(exc)
        return Response(
            {
                "stored": report.stored,
                "already_present": report.already_present,
                "detail": f"Stored {report.stored} reference(s).",
            },
            status=status.HTTP_201_CREATED,
        )
