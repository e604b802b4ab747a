"""REST API of scoring: the job table, starting a study job, and the stored scores."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import generics, serializers, status
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.api.parsers import StrictJSONParser
from annotation.errors import ServiceError
from annotation.permissions import (
    IsStudyAdmin,
    Role,
    member_study_from_view,
    require_model_identity,
    study_from_view,
    user_roles,
)
from scoring.models import ScoreJob, ScoreResult
from scoring.services import score_job_create, score_jobs_recover, score_summary


class SeesScores(BasePermission):
    """The study's admins and researchers see jobs and scores."""

    message = "Only the study's admins and researchers see its scores."

    def has_permission(self, request, view):
        study = member_study_from_view(view, request.user)
        if not user_roles(request.user, study) & {Role.ADMIN, Role.RESEARCHER}:
            return False
        require_model_identity(request.user, study)  # scores are by model
        return True


class StartsScoring(SeesScores):
    """The study's admins and researchers start study scoring jobs (a researcher reading the
    leaderboard is told to run one). There is no cancelling of jobs, theirs or others'."""

    message = "Only the study's admins and researchers start scoring jobs."


class ScoreJobSerializer(serializers.ModelSerializer):
    requested_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    progress = serializers.SerializerMethodField()
    chunks = serializers.SerializerMethodField()
    clip = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = ScoreJob
        fields = [
            "id",
            "kind",
            "annotation",
            "metrics",
            "judges",
            "splitter",
            "status",
            "progress",
            "chunks",
            "clip",
            "errors",
            "requested_by",
            "attempts",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields

    def get_progress(self, job: ScoreJob) -> dict:
        percent = (
            round(100 * job.progress_done / job.progress_total)
            if job.progress_total
            else (100 if job.finished else 0)
        )
        return {"done": job.progress_done, "total": job.progress_total, "percent": percent}

    def get_chunks(self, job: ScoreJob) -> dict:
        """A study job's chunks: how many, done and failed (a verdict job has none)."""
        return {"total": job.chunks_total, "done": job.chunks_done, "failed": job.chunks_failed}


class ScoreJobStartSerializer(serializers.Serializer):
    metrics = serializers.ListField(child=serializers.CharField(), required=False, allow_empty=True)
    judges = serializers.ListField(child=serializers.CharField(), required=False, allow_empty=True)
    splitter = serializers.ChoiceField(choices=["punkt", "redline"], default="punkt",
                                       help_text="sentence splitter of fine, HM-CF and CosSen")


class ScoreResultSerializer(serializers.ModelSerializer):
    class Meta:
        model = ScoreResult
        fields = [
            "id",
            "subject",
            "item_key",
            "caption",
            "window",
            "annotation",
            "metric",
            "judge_or_backend",
            "metric_version",
            "value",
            "detail",
            "job",
            "computed_at",
        ]


class ScoreJobList(generics.ListAPIView):
    """GET: the study's scoring jobs, newest first. POST: score the whole study now (admins
    and researchers), with a JSON object (or no body): a form or a multipart body is refused
    (415), as a JSON body that is not an object is (400), instead of starting a job with every
    default."""

    serializer_class = ScoreJobSerializer
    parser_classes = [StrictJSONParser]

    def get_permissions(self):
        return [StartsScoring()] if self.request.method == "POST" else [SeesScores()]

    def get_queryset(self):
        return ScoreJob.objects.filter(study=study_from_view(self)).select_related("requested_by")

    def get(self, request, *args, **kwargs):
        # Whoever looks at the table sees a job whose process died resumed or failed, not
        # "running" forever (workers also recover jobs when they start).
        score_jobs_recover(study=study_from_view(self))
        return super().get(request, *args, **kwargs)

    @extend_schema(request=ScoreJobStartSerializer, responses={202: ScoreJobSerializer})
    def post(self, request, slug):
        start = ScoreJobStartSerializer(data=request.data)
        start.is_valid(raise_exception=True)
        try:
            job = score_job_create(
                study=study_from_view(self),
                metrics=start.validated_data.get("metrics") or None,
                judges=start.validated_data.get("judges") or None,
                splitter=start.validated_data["splitter"],
                requested_by=request.user,
            )
        except ServiceError as error:
            return Response({"detail": str(error)}, status=status.HTTP_400_BAD_REQUEST)
        job.refresh_from_db()  # queued, or already running in a worker or a job thread
        return Response(ScoreJobSerializer(job).data, status=status.HTTP_202_ACCEPTED)


class ScoreJobDetail(generics.RetrieveAPIView):
    permission_classes = [SeesScores]
    serializer_class = ScoreJobSerializer
    lookup_url_kwarg = "job_id"

    def get_queryset(self):
        return ScoreJob.objects.filter(study=study_from_view(self))

    def get(self, request, *args, **kwargs):
        score_jobs_recover(study=study_from_view(self))
        return super().get(request, *args, **kwargs)


class ScoreJobCancel(APIView):
    """POST: cancel an unfinished job (admins): the chunks not yet started are not run."""

    permission_classes = [IsStudyAdmin]

    @extend_schema(request=None, responses={200: ScoreJobSerializer})
    def post(self, request, slug, job_id):
        from django.shortcuts import get_object_or_404

        from scoring.chunks import score_job_cancel

        job = get_object_or_404(ScoreJob, study=study_from_view(self), pk=job_id)
        if not score_job_cancel(job_id=job.pk):
            return Response({"detail": f"Job #{job.pk} is {job.status}: nothing to cancel."},
                            status=status.HTTP_409_CONFLICT)
        job.refresh_from_db()
        return Response(ScoreJobSerializer(job).data)


class ScoreResultList(generics.ListAPIView):
    """Stored scores; filter with ?subject=, ?metric=, ?judge=, ?caption=, ?annotation=."""

    permission_classes = [SeesScores]
    serializer_class = ScoreResultSerializer

    def get_queryset(self):
        results = ScoreResult.objects.filter(study=study_from_view(self))
        filters = {
            "subject": "subject",
            "metric": "metric",
            "judge": "judge_or_backend",
            "caption": "caption_id",
            "annotation": "annotation_id",
        }
        for parameter, field in filters.items():
            value = self.request.query_params.get(parameter)
            if value is not None:
                if field.endswith("_id") and not (
                    value.isascii() and value.isdigit() and len(value) <= 18
                ):
                    raise serializers.ValidationError({parameter: "Give a number."})
                results = results.filter(**{field: value})
        return results


SummaryRows = inline_serializer(
    "ScoreSummaryRow",
    many=True,
    fields={
        "subject": serializers.CharField(),
        "metric": serializers.CharField(),
        "judge_or_backend": serializers.CharField(),
        "metric_version": serializers.CharField(),
        "count": serializers.IntegerField(),
        "mean": serializers.FloatField(allow_null=True),
        "minimum": serializers.FloatField(allow_null=True),
        "maximum": serializers.FloatField(allow_null=True),
    },
)


class ScoreSummary(APIView):
    """Per subject, metric, judge and metric version: count, mean, min and max."""

    permission_classes = [SeesScores]

    @extend_schema(responses=SummaryRows)
    def get(self, request, slug):
        return Response(score_summary(study=study_from_view(self)))


class ScoresImportSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="JSON Lines, one score per line (see import_scores)")
    metric = serializers.CharField(required=False, max_length=60)
    direction = serializers.ChoiceField(choices=["higher", "lower"], required=False)
    version = serializers.CharField(required=False, max_length=200)
    source = serializers.CharField(required=False, max_length=200)
    references = serializers.ChoiceField(choices=["none", "imported"], default="none")
    replace = serializers.BooleanField(
        default=False, help_text="replace the scores the captions already have of this metric and "
                                 "source (without it they are refused)")


class ScoresImport(APIView):
    """POST (study admins): attach per-caption scores computed elsewhere (multipart `file`;
    `metric`, `direction`, `version`, `source`, `references` for lines that give none; `replace`
    to replace the scores captions already have of a metric and source). 201 with what was
    stored and replaced, 400 with every error (`line N, field: reason`; nothing is stored), or
    413 for a file over MAX_IMPORT_FILE_MB."""

    permission_classes = [IsStudyAdmin]

    @extend_schema(request={"multipart/form-data": ScoresImportSerializer},
                   responses={201: inline_serializer("ScoresImported", {
                       "stored": serializers.IntegerField(),
                       "replaced": serializers.IntegerField(),
                       "metrics": serializers.ListField(child=serializers.CharField()),
                       "detail": serializers.CharField()})})
    def post(self, request, slug):
        from annotation.api.content import uploaded_file
        from annotation.errors import ImportRefused
        from annotation.interchange.formats.scores import Defaults
        from scoring.external_scores import external_scores_import

        upload = uploaded_file(request)  # 413 naming the limit, before a large body is read
        # The study page's import forms send their fields in the query string, beside the file.
        fields = {**request.query_params.dict(), **{k: v for k, v in request.data.items()}}
        body = ScoresImportSerializer(data=fields)
        body.is_valid(raise_exception=True)
        given = body.validated_data
        defaults = Defaults(metric=given.get("metric"), direction=given.get("direction"),
                            version=given.get("version"), source=given.get("source"),
                            references=given["references"])
        try:
            report = external_scores_import(study=study_from_view(self), data=upload.read(),
                                            defaults=defaults, replace=given["replace"])
        except ImportRefused as refused:
            return Response({"detail": str(refused), "errors": refused.errors},
                            status=status.HTTP_400_BAD_REQUEST)
        return Response({"stored": report.stored, "replaced": report.replaced,
                         "metrics": report.metrics, "detail": report.sentence},
                        status=status.HTTP_201_CREATED)
