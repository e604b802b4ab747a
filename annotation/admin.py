"""The Django admin: browsing everything, and the few edits that go through services.

A study's settings and members change here only through the same services as on Redline's own
pages (audited in the study's history, with the same refusals: a site admin without a role in
the study may only add themselves). Clips, models, captions and references are read-only here:
their imports write them. Someone who annotates or reviews in a study is not shown its models or
captions here either (annotation.permissions.sees_model_identity).
"""

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied

from annotation.errors import ServiceError
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
from annotation.permissions import MEMBERS_REFUSAL, SETTINGS_REFUSAL, WORKS_BLIND, Role, user_roles
from annotation.services import members
from annotation.services.studies import study_update
from annotation.services.taxonomy import taxonomy_mode_update


class ReadOnlyAdmin(admin.ModelAdmin):
    """Browsing only: the rows are written by Redline's services (imports, the workflow)."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


def hidden_from_blind(queryset, request, study_path: str):
    """Leave out the rows of studies where the person annotates or reviews (they work blind)."""
    blind = Membership.objects.filter(user=request.user, role__in=WORKS_BLIND).values("study_id")
    return queryset.exclude(**{f"{study_path}__in": blind})


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
    """Saved by StudyAdmin.save_formset through the members services, never row by row."""

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

    def save_model(self, request, obj, form, change):
        """A change of settings goes through study_update (audited as study_update), for the
        study's admins only, as on its settings page."""
        if not change:
            return super().save_model(request, obj, form, change)
        if not form.changed_data:
            return None
        if Role.ADMIN not in user_roles(request.user, obj):
            raise PermissionDenied(SETTINGS_REFUSAL)
        try:
            study_update(study=obj, actor=request.user,
                         changes={field: form.cleaned_data[field] for field in form.changed_data})
        except ServiceError as exc:
            messages.error(request, str(exc))
            obj.refresh_from_db()
        return None

    def save_formset(self, request, form, formset, change):
        if formset.model is not Membership:
            return super().save_formset(request, form, formset, change)
        study = form.instance
        wanted: dict = {}
        for row in formset.forms:
            data = getattr(row, "cleaned_data", None) or {}
            if data.get("user") is not None and data.get("role") and not data.get("DELETE"):
                wanted.setdefault(data["user"], set()).add(data["role"])
        people = {m.user for m in Membership.objects.filter(study=study).select_related("user")} | set(wanted)
        for person in people:
            self._roles_to(request, study, person, sorted(wanted.get(person, set()), key=Role.values.index))
        # What the admin's own log reads; the study's history has the members services' events.
        formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []
        return None

    def _roles_to(self, request, study, person, roles):
        """Give `person` exactly `roles` through the members services, as the members page would."""
        held = members.roles_of(study=study, user=person)
        if held == roles:
            return
        actor = request.user
        if Role.ADMIN not in user_roles(actor, study) and not (person.pk == actor.pk and not held):
            raise PermissionDenied(MEMBERS_REFUSAL)
        try:
            if not held:
                members.member_add(study=study, actor=actor, user=person, roles=roles)
            elif not roles:
                members.member_deactivate(study=study, actor=actor, user=person)
            else:
                members.member_roles_set(study=study, actor=actor, user=person, roles=roles)
        except ServiceError as exc:
            messages.error(request, f"{person.get_username()}: {exc}")
        getattr(actor, "_redline_roles", {}).pop(study.pk, None)  # the actor's roles may have changed


@admin.register(Clip)
class ClipAdmin(ReadOnlyAdmin):
    list_display = ("name", "study", "duration", "width", "height", "codec", "manipulated")
    list_filter = ("study", "manipulated", "content_type", "camera_platform")
    search_fields = ("name", "sha256")
    readonly_fields = [
        "original", "original_filename", "size_bytes", "sha256", "duration", "fps", "width",
        "height", "codec", "pix_fmt", "container", "proxy", "poster", "media_error",
    ]


@admin.register(CandidateModel)
class CandidateModelAdmin(ReadOnlyAdmin):
    list_display = ("alias", "name", "identifier", "route", "study")
    list_filter = ("study",)

    def get_queryset(self, request):
        return hidden_from_blind(super().get_queryset(request), request, "study")


class WindowInline(admin.TabularInline):
    model = Window
    extra = 0

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Caption)
class CaptionAdmin(ReadOnlyAdmin):
    list_display = ("clip", "model", "invalid_kept", "retried", "re_encoded")
    list_filter = ("clip__study", "invalid_kept")
    inlines = [WindowInline]

    def get_queryset(self, request):
        return hidden_from_blind(super().get_queryset(request), request, "clip__study")


@admin.register(Reference)
class ReferenceAdmin(ReadOnlyAdmin):
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
