"""REST API: thin views that parse input, call one service and serialise the result."""

from __future__ import annotations

import tempfile
from pathlib import Path

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import generics, serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import formats, media
from annotation.models import Caption, Clip
from annotation.permissions import (
    IsStudyAdmin,
    IsStudyMember,
    sees_model_identity,
    studies_of,
    study_from_view,
)
from annotation.serializers import (
    CandidateModelSerializer,
    CaptionSerializer,
    ClipSerializer,
    StudySerializer,
)
from annotation.services.captions import (
    captions_import_jsonl,
    captions_store,
    references_store,
    study_caption_pairs,
    study_clip_durations,
)
from annotation.services.clips import clip_import_file, clip_properties_set
from annotation.services.errors import ImportRefused, ServiceError

UploadSerializer = inline_serializer("Upload", {"file": serializers.FileField()})


def refused(exc: ImportRefused) -> Response:
    return Response(
        {"detail": f"{len(exc.errors)} error(s); nothing was stored.", "errors": exc.errors},
        status=status.HTTP_400_BAD_REQUEST,
    )


def uploaded_bytes(request) -> bytes:
    upload = request.FILES.get("file")
    if upload is None:
        raise serializers.ValidationError({"file": "Attach the file as multipart field 'file'."})
    return upload.read()


class StudyList(generics.ListAPIView):
    serializer_class = StudySerializer

    def get_queryset(self):
        return studies_of(self.request.user).select_related("taxonomy")


class StudyDetail(APIView):
    permission_classes = [IsStudyMember]

    @extend_schema(responses=StudySerializer)
    def get(self, request, slug):
        study = study_from_view(self)
        return Response(StudySerializer(study, context={"request": request}).data)


class StudyContextMixin:
    def get_serializer_context(self):
        context = super().get_serializer_context()
        context["sees_identity"] = sees_model_identity(self.request.user, study_from_view(self))
        return context


class ClipList(generics.ListAPIView):
    permission_classes = [IsStudyMember]
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

    @extend_schema(request=UploadSerializer, responses=None)
    def post(self, request, slug):
        study = study_from_view(self)
        records, errors = formats.parse_clip_properties_csv(uploaded_bytes(request))
        clips = {clip.name: clip for clip in study.clips.all()}
        errors = [str(e) for e in errors] + [
            f"line {r.line}, clip: unknown clip {r.clip!r}" for r in records if r.clip not in clips
        ]
        if errors:
            return refused(ImportRefused(errors))
        from django.db import transaction

        with transaction.atomic():
            for record in records:
                clip_properties_set(
                    clip=clips[record.clip], properties=record.properties, manipulated=record.manipulated
                )
        return Response({"stored": len(records), "detail": f"Updated {len(records)} clip(s)."})


class CandidateModelList(StudyContextMixin, generics.ListAPIView):
    permission_classes = [IsStudyMember]
    serializer_class = CandidateModelSerializer
    pagination_class = None

    def get_queryset(self):
        return study_from_view(self).candidate_models.all()


class CaptionList(StudyContextMixin, generics.ListAPIView):
    permission_classes = [IsStudyMember]
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
        clip = self.request.query_params.get("clip")
        return captions.filter(clip__name=clip) if clip else captions


class CaptionImport(APIView):
    permission_classes = [IsStudyAdmin]
    parser_classes = [MultiPartParser]

    @extend_schema(
        request=UploadSerializer,
        parameters=[
            OpenApiParameter("format", str, enum=["jsonl", "clip-cc"]),
            OpenApiParameter("model", str, description="model name for clip-cc files"),
            OpenApiParameter("keep_invalid", bool),
        ],
    )
    def post(self, request, slug):
        study = study_from_view(self)
        data = uploaded_bytes(request)
        keep_invalid = request.query_params.get("keep_invalid", "").lower() in {"1", "true", "yes"}
        try:
            if request.query_params.get("format", "jsonl") == "clip-cc":
                model = request.query_params.get("model") or Path(request.FILES["file"].name).stem
                result = formats.parse_clip_cc_model_file(
                    data,
                    model=model,
                    clip_durations=study_clip_durations(study),
                    existing_pairs=study_caption_pairs(study),
                    keep_invalid=keep_invalid,
                )
                report = captions_store(study=study, result=result, keep_invalid=keep_invalid)
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


class ReferenceImport(APIView):
    permission_classes = [IsStudyAdmin]
    parser_classes = [MultiPartParser]

    @extend_schema(
        request=UploadSerializer,
        parameters=[
            OpenApiParameter("format", str, enum=["jsonl", "clip-cc", "fm-v2t"]),
            OpenApiParameter("language", str),
        ],
    )
    def post(self, request, slug):
        study = study_from_view(self)
        data = uploaded_bytes(request)
        known = set(study.clips.values_list("name", flat=True))
        kind = request.query_params.get("format", "jsonl")
        if kind == "clip-cc":
            records, errors = formats.parse_clip_cc_references(data, known_clips=known)
        elif kind == "fm-v2t":
            language = request.query_params.get("language", "en")
            records, errors = formats.parse_fmv2t_descriptions_csv(data, language=language, known_clips=known)
        else:
            records, errors = formats.parse_references_jsonl(data, known_clips=known)
        try:
            report = references_store(study=study, records=records, errors=errors)
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
