"""The Django admin: browsing everything, and the few edits that go through services."""

from django.contrib import admin, messages

from annotation.models import (
    CandidateModel,
    Caption,
    CaptionImportJob,
    Clip,
    FailureMode,
    Membership,
    Reference,
    Study,
    TaxonomyVersion,
    Window,
)
from annotation.services.errors import ServiceError
from annotation.services.taxonomy import taxonomy_mode_update


class FailureModeInline(admin.TabularInline):
    model = FailureMode
    extra = 0
    fields = ("position", "key", "name", "definition", "decision_test", "level")

    def has_change_permission(self, request, obj=None):
        # obj is the taxonomy version: a version in use is read-only, here and in services.
        return not (obj and obj.is_frozen) and super().has_change_permission(request, obj)

    def has_add_permission(self, request, obj=None):
        return not (obj and obj.is_frozen) and super().has_add_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return not (obj and obj.is_frozen) and super().has_delete_permission(request, obj)


@admin.register(TaxonomyVersion)
class TaxonomyVersionAdmin(admin.ModelAdmin):
    list_display = ("name", "version", "content_hash", "frozen_at")
    readonly_fields = ("content_hash", "frozen_at", "created_at")
    inlines = [FailureModeInline]

    def has_change_permission(self, request, obj=None):
        return not (obj and obj.is_frozen) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(FailureMode)
class FailureModeAdmin(admin.ModelAdmin):
    list_display = ("key", "name", "level", "taxonomy")
    list_filter = ("taxonomy",)

    def has_change_permission(self, request, obj=None):
        return not (obj and obj.taxonomy.is_frozen) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return False

    def save_model(self, request, obj, form, change):
        if not change:
            return super().save_model(request, obj, form, change)
        try:
            taxonomy_mode_update(mode=obj, **{f: form.cleaned_data[f] for f in form.changed_data})
        except ServiceError as exc:
            messages.error(request, str(exc))


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "state", "taxonomy", "created_at")
    inlines = [MembershipInline]

    def add_view(self, request, form_url="", extra_context=None):
        """Studies are created on Redline's New study page, which checks every setting at its
        field, makes the creator the study's admin and records it in the study's history."""
        from django.shortcuts import redirect

        return redirect("study-new")

    def get_readonly_fields(self, request, obj=None):
        """The state moves through the lifecycle services only; the frozen settings of a study
        that left setup are shown, not offered (the database refuses them too)."""
        from annotation.services.lifecycle import FROZEN_FIELDS

        if obj is None:
            return ("state",)
        frozen = tuple(FROZEN_FIELDS) if obj.state != "setup" else ()
        return ("state", *frozen)


@admin.register(Clip)
class ClipAdmin(admin.ModelAdmin):
    list_display = ("name", "study", "duration", "width", "height", "codec", "manipulated")
    list_filter = ("study", "manipulated", "content_type", "camera_platform")
    search_fields = ("name", "sha256")
    readonly_fields = [
        "original", "original_filename", "size_bytes", "sha256", "duration", "fps", "width",
        "height", "codec", "pix_fmt", "container", "proxy", "poster", "media_error",
    ]


@admin.register(CandidateModel)
class CandidateModelAdmin(admin.ModelAdmin):
    list_display = ("alias", "name", "identifier", "route", "study")
    list_filter = ("study",)


class WindowInline(admin.TabularInline):
    model = Window
    extra = 0


@admin.register(Caption)
class CaptionAdmin(admin.ModelAdmin):
    list_display = ("clip", "model", "invalid_kept", "retried", "re_encoded")
    list_filter = ("clip__study", "model", "invalid_kept")
    inlines = [WindowInline]


@admin.register(Reference)
class ReferenceAdmin(admin.ModelAdmin):
    list_display = ("clip", "source", "language")
    list_filter = ("source", "language")


@admin.register(CaptionImportJob)
class CaptionImportJobAdmin(admin.ModelAdmin):
    """Browsing only: jobs are written by the import job services."""

    list_display = ("id", "study", "file_name", "format", "state", "stored", "attempts", "created_at",
                    "finished_at")
    list_filter = ("state", "study")
    date_hierarchy = "created_at"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
