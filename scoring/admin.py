"""The Django admin: browsing scoring jobs and results (they are written by jobs only)."""

from django.contrib import admin

from scoring.models import ScoreJob, ScoreResult


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(ScoreJob)
class ScoreJobAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "study",
        "kind",
        "annotation",
        "status",
        "progress",
        "attempts",
        "created_at",
        "finished_at",
    )
    list_filter = ("status", "kind", "study")
    date_hierarchy = "created_at"

    @admin.display(description="progress")
    def progress(self, job: ScoreJob) -> str:
        return f"{job.progress_done}/{job.progress_total}"


@admin.register(ScoreResult)
class ScoreResultAdmin(ReadOnlyAdmin):
    list_display = (
        "item_key",
        "subject",
        "metric",
        "judge_or_backend",
        "metric_version",
        "value",
        "computed_at",
    )
    list_filter = ("subject", "metric", "judge_or_backend", "study")
    search_fields = ("item_key",)
    raw_id_fields = ("caption", "window", "annotation", "job")
