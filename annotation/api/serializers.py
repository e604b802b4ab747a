"""API representations. Model identity is shown only to admins and researchers."""

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from annotation.models import (
    AssignmentDesign,
    CandidateModel,
    Caption,
    CaptionImportJob,
    CaptionLanguage,
    Clip,
    FailureMode,
    Study,
    StudyState,
    Window,
)
from annotation.services.caption_jobs import caption_import_job_status


class FailureModeSerializer(serializers.ModelSerializer):
    class Meta:
        model = FailureMode
        fields = ["key", "name", "definition", "decision_test", "level"]


class TaxonomySummarySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    version = serializers.IntegerField()
    content_hash = serializers.CharField(allow_blank=True)
    frozen = serializers.BooleanField()
    precedence_rules = serializers.JSONField()
    modes = FailureModeSerializer(many=True)


class StudySerializer(serializers.ModelSerializer):
    taxonomy = serializers.SerializerMethodField()
    roles = serializers.SerializerMethodField()
    # Plain value lists, as the bodies that set them (annotation.api.studies) name them.
    assignment_design = serializers.ChoiceField(choices=AssignmentDesign.values, read_only=True)
    caption_language = serializers.ChoiceField(choices=CaptionLanguage.values, read_only=True)
    # Moved only by the lifecycle endpoints (annotation.api.lifecycle).
    state = serializers.ChoiceField(choices=StudyState.choices, read_only=True)

    class Meta:
        model = Study
        fields = [
            "slug", "name", "description", "word_thresholds", "near_total_cut", "length_band",
            "assignment_design", "spread_gap", "overlap_share", "undo_seconds", "caption_language",
            "erase_on_withdrawal", "state", "taxonomy", "roles", "created_at",
        ]

    @extend_schema_field(TaxonomySummarySerializer)
    def get_taxonomy(self, study):
        taxonomy = study.taxonomy
        return {
            "id": taxonomy.pk,
            "name": taxonomy.name,
            "version": taxonomy.version,
            "content_hash": taxonomy.content_hash,
            "frozen": taxonomy.is_frozen,
            "precedence_rules": taxonomy.precedence_rules,
            "modes": FailureModeSerializer(taxonomy.modes.all(), many=True).data,
        }

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_roles(self, study):
        from annotation.permissions import user_roles

        return sorted(user_roles(self.context["request"].user, study))


class ClipSerializer(serializers.ModelSerializer):
    video_url = serializers.SerializerMethodField()
    poster_url = serializers.SerializerMethodField()
    needs_proxy_pending = serializers.SerializerMethodField()

    class Meta:
        model = Clip
        fields = [
            "id", "name", "original_filename", "size_bytes", "sha256", "duration", "fps",
            "width", "height", "codec", "pix_fmt", "content_type", "camera_platform",
            "scene_complexity", "shot_scale", "motion_intensity", "manipulated", "media_error",
            "shot_changes", "video_url", "poster_url", "needs_proxy_pending", "created_at",
        ]

    def to_representation(self, instance):
        data = super().to_representation(instance)
        # Whether a clip is a manipulated control is for study admins and researchers only.
        if self.context.get("sees_every_caption") is False:
            data.pop("manipulated", None)
        return data

    def get_video_url(self, clip) -> str:
        return f"/clips/{clip.pk}/video"

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_poster_url(self, clip):
        return f"/clips/{clip.pk}/poster" if clip.poster else None

    def get_needs_proxy_pending(self, clip) -> bool:
        return not clip.poster and not clip.media_error


class CandidateModelSerializer(serializers.ModelSerializer):
    """A model as a study member sees it: the alias, and the rest only for who sees identities."""

    class Meta:
        model = CandidateModel
        fields = ["alias", "name", "identifier", "route", "providers"]
        # Left out of the answer for who does not see identities: the schema must not promise them.
        extra_kwargs = {name: {"required": False} for name in ("name", "identifier", "route",
                                                               "providers")}

    def to_representation(self, instance):
        data = super().to_representation(instance)
        if not self.context.get("sees_identity"):
            data = {"alias": data["alias"]}
        return data


class WindowSerializer(serializers.ModelSerializer):
    class Meta:
        model = Window
        fields = ["index", "start", "end", "scene", "shot"]


class CaptionSerializer(serializers.ModelSerializer):
    clip = serializers.CharField(source="clip.name")
    model = serializers.SerializerMethodField()
    windows = WindowSerializer(many=True)

    class Meta:
        model = Caption
        fields = [
            "id", "clip", "model", "overview", "windows", "input_tokens_per_second", "retried",
            "re_encoded", "invalid_kept", "validation_errors",
        ]

    @extend_schema_field(
        serializers.CharField(help_text="the alias, or the name for those who see it")
    )
    def get_model(self, caption):
        if self.context.get("sees_identity"):
            return caption.model.name
        return caption.model.alias


class ImportResultSerializer(serializers.Serializer):
    stored = serializers.IntegerField()
    detail = serializers.CharField()


class CaptionImportReportSerializer(serializers.Serializer):
    stored = serializers.IntegerField()
    kept_invalid = serializers.IntegerField()
    models_created = serializers.ListField(child=serializers.CharField())
    errors = serializers.ListField(child=serializers.CharField(),
                                   help_text="schema errors of the captions kept invalid")


class CaptionImportJobSerializer(serializers.Serializer):
    """A caption import job; while it runs, its phase and counts come from the cache."""

    id = serializers.IntegerField()
    url = serializers.CharField(help_text="this job in the API, to follow it")
    state = serializers.ChoiceField(choices=CaptionImportJob.State.values)
    phase = serializers.ChoiceField(
        choices=["", "waiting", "validating", "storing"],
        help_text="while running: waiting for the study's earlier import, validating, storing")
    file_name = serializers.CharField()
    format = serializers.ChoiceField(choices=CaptionImportJob.Format.values)
    model = serializers.CharField(allow_blank=True, help_text="the model of a clip-cc file")
    keep_invalid = serializers.BooleanField()
    requested_by = serializers.CharField(allow_null=True)
    stored = serializers.IntegerField(help_text="captions stored so far (all once done)")
    total = serializers.IntegerField(help_text="captions to store; 0 until storing starts")
    report = CaptionImportReportSerializer(allow_null=True, help_text="what a finished import stored")
    errors = serializers.ListField(child=serializers.CharField(),
                                   help_text="refused: every error (line, field, reason); failed: why")
    detail = serializers.CharField(help_text="where the job stands, in one sentence")
    attempts = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)

    def to_representation(self, instance: CaptionImportJob) -> dict:
        return super().to_representation({
            **caption_import_job_status(instance),
            "url": reverse("api-caption-import-job",
                           kwargs={"slug": instance.study.slug, "job_id": instance.pk}),
        })
