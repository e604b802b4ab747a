"""Who may do what in a study. Views and the API use these; services trust their callers."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from rest_framework.permissions import BasePermission

from annotation.models import Membership, Study

Role = Membership.Role
# Roles that may see which model wrote a caption (everyone else sees the neutral alias).
SEES_MODEL_IDENTITY = {Role.ADMIN, Role.RESEARCHER}


def user_roles(user, study: Study) -> set[str]:
    if not user.is_authenticated:
        return set()
    cache = getattr(user, "_redline_roles", None)
    if cache is None:
        cache = user._redline_roles = {}
    if study.pk not in cache:
        cache[study.pk] = set(
            Membership.objects.filter(study=study, user=user).values_list("role", flat=True)
        )
    return cache[study.pk]


def is_member(user, study: Study) -> bool:
    return bool(user_roles(user, study))


def sees_model_identity(user, study: Study) -> bool:
    return bool(user_roles(user, study) & SEES_MODEL_IDENTITY)


def studies_of(user):
    if not user.is_authenticated:
        return Study.objects.none()
    return Study.objects.filter(memberships__user=user).distinct()


def study_from_view(view) -> Study:
    study = getattr(view, "_study", None)
    if study is None:
        study = view._study = get_object_or_404(Study, slug=view.kwargs["slug"])
    return study


class IsStudyMember(BasePermission):
    message = "You are not a member of this study."

    def has_permission(self, request, view):
        return is_member(request.user, study_from_view(view))


class IsStudyAdmin(BasePermission):
    message = "Only the study's admins may do this."

    def has_permission(self, request, view):
        return Role.ADMIN in user_roles(request.user, study_from_view(view))
