"""Studies, their members and their candidate models."""

from __future__ import annotations

import string
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction

from annotation.errors import FieldErrors, ServiceError
from annotation.models import (
    AssignmentDesign,
    AuditEvent,
    CandidateModel,
    CaptionLanguage,
    Membership,
    Study,
    TaxonomyVersion,
)
from annotation.rules import study_settings
from annotation.services import lifecycle
from annotation.services.study_state import Write, study_require
from annotation.services.taxonomy import taxonomy_default

STUDY_FIELDS = (
    "name", "description", "word_thresholds", "near_total_cut", "length_band", "assignment_design",
    "spread_gap", "overlap_share", "undo_seconds", "caption_language", "erase_on_withdrawal",
)


def _checked(values: dict[str, Any]) -> dict[str, Any]:
    """The values cleaned, or FieldErrors naming every field refused (taxonomy included)."""
    raw = dict(values)
    taxonomy = raw.pop("taxonomy", None)
    cleaned, errors = study_settings.settings_check(
        raw, designs=AssignmentDesign.values, languages=CaptionLanguage.values
    )
    if taxonomy is not None:
        if isinstance(taxonomy, TaxonomyVersion):
            cleaned["taxonomy"] = taxonomy
        else:
            found = None
            if isinstance(taxonomy, int) and not isinstance(taxonomy, bool):
                found = TaxonomyVersion.objects.filter(pk=taxonomy).first()
            if found is None:
                errors["taxonomy"] = f"There is no taxonomy version {taxonomy!r:.20}; pick one of the list."
            else:
                cleaned["taxonomy"] = found
    if errors:
        raise FieldErrors(errors)
    return cleaned


def _setting(value: Any) -> Any:
    """A setting as the audit trail keeps it (JSON)."""
    if isinstance(value, TaxonomyVersion):
        return {"id": value.pk, "name": str(value)}
    return value


def study_audit(*, study: Study, actor, action: str, before: dict[str, Any], after: dict[str, Any]) -> AuditEvent:
    """One event of the study's history page: membership, invitations and settings."""
    return AuditEvent.objects.create(study=study, actor=actor, action=action, before=before, after=after)


@transaction.atomic
def study_create(
    *,
    slug: str,
    name: str,
    taxonomy: TaxonomyVersion | int | None = None,
    description: str = "",
    word_thresholds: list[int] | None = None,
    near_total_cut: float | None = None,
    length_band: float | None = None,
    created_by=None,
    state: str | None = None,
    **other_settings: Any,
) -> Study:
    """A new study, with `created_by` (when given) as its study admin, in one transaction.

    Every value is checked first (FieldErrors names each refused field); `other_settings` are
    the rest of STUDY_FIELDS (assignment_design, spread_gap, overlap_share, undo_seconds,
    caption_language). `state` defaults to the model's (running); the pages and the API
    create studies in setup."""
    unknown = sorted(set(other_settings) - set(STUDY_FIELDS))
    if unknown:
        raise ServiceError(f"Unknown study setting(s): {', '.join(unknown)}.")
    values: dict[str, Any] = {"slug": slug, "name": name, "description": description, **other_settings}
    for field, value in (("taxonomy", taxonomy), ("word_thresholds", word_thresholds),
                         ("near_total_cut", near_total_cut), ("length_band", length_band)):
        if value is not None:
            values[field] = value
    cleaned = _checked(values)
    if Study.objects.filter(slug=slug).exists():
        raise FieldErrors({"slug": f"A study with slug {slug!r} already exists; choose another."})
    cleaned.setdefault("taxonomy", taxonomy_default())
    study = Study(**cleaned)
    if state is not None:
        study.state = state
    study.full_clean(validate_unique=False)
    try:
        with transaction.atomic():
            study.save()
    except IntegrityError as exc:  # another request took the slug meanwhile
        raise FieldErrors({"slug": f"A study with slug {slug!r} already exists; choose another."}) from exc
    if created_by is not None:  # made by a person (the pages, the API): the history starts here
        after = {field: _setting(getattr(study, field)) for field in ("slug", "taxonomy", *STUDY_FIELDS)}
        study_audit(study=study, actor=created_by, action="study_create", before={}, after=after)
        membership_grant(study=study, user=created_by, role=Membership.Role.ADMIN)
        study_audit(study=study, actor=created_by, action="member_add", before={},
                    after={"user": created_by.get_username(), "roles": [Membership.Role.ADMIN]})
    return study


@transaction.atomic
def study_update(*, study: Study, actor, changes: dict[str, Any]) -> Study:
    """Change the study's settings (any of STUDY_FIELDS and taxonomy); audited as
    `study_update` with the old and new value of each field that changed.

    The one place settings change: once the study left setup, its frozen settings are refused
    here (annotation.services.lifecycle.study_require_setup), before the write."""
    if "slug" in changes:
        raise FieldErrors({"slug": "A study's slug cannot change: its links would break."})
    unknown = sorted(set(changes) - {*STUDY_FIELDS, "taxonomy"})
    if unknown:
        raise FieldErrors({field: "This is not a study setting." for field in unknown})
    cleaned = _checked(changes)
    study = Study.objects.select_for_update().select_related("taxonomy").get(pk=study.pk)
    changed = [f for f, value in cleaned.items() if getattr(study, f) != value]
    if changed:  # a closed study takes no setting; a running one none of its frozen settings
        study_require(study, Write.SETTINGS)
        lifecycle.study_require_setup(study, changed)
    before, after = {}, {}
    for field, value in cleaned.items():
        if getattr(study, field) != value:
            before[field], after[field] = _setting(getattr(study, field)), _setting(value)
            setattr(study, field, value)
    if not after:
        return study
    study.full_clean()
    study.save(update_fields=list(after))
    study_audit(study=study, actor=actor, action="study_update", before=before, after=after)
    return study


def membership_grant(*, study: Study, user: AbstractBaseUser, role: str) -> Membership:
    """Give `user` the role in `study` (idempotent)."""
    study_require(study, Write.MEMBERS)
    if role not in Membership.Role.values:
        raise ServiceError(f"Unknown role {role!r}; roles are {', '.join(Membership.Role.values)}.")
    held = set(Membership.objects.filter(study=study, user=user).values_list("role", flat=True))
    clash = {Membership.Role.ANNOTATOR: Membership.Role.RESEARCHER,
             Membership.Role.RESEARCHER: Membership.Role.ANNOTATOR}.get(role)
    if clash in held:
        # A researcher sees which model wrote each caption; an annotator must not.
        raise ServiceError(
            f"{user.get_username()} is a {clash} of study {study.slug}; nobody is both annotator "
            "and researcher of one study (annotators work blind to the models)."
        )
    membership, _ = Membership.objects.get_or_create(study=study, user=user, role=role)
    return membership


def alias_for_index(index: int) -> str:
    """Model A, Model B, ... Model Z, Model AA, ...: neutral names for blind review."""
    letters = ""
    index += 1
    while index:
        index, remainder = divmod(index - 1, 26)
        letters = string.ascii_uppercase[remainder] + letters
    return f"Model {letters}"


@transaction.atomic
def candidate_model_get_or_create(
    *,
    study: Study,
    name: str,
    identifier: str = "",
    route: str = "",
    providers: list[str] | None = None,
) -> CandidateModel:
    """The study's model called `name`, created with the next free neutral alias if new."""
    existing = CandidateModel.objects.filter(study=study, name=name).first()
    if existing:
        return existing
    study_require(study, Write.CONTENT)
    # Lock the study row so two concurrent imports cannot hand out one alias twice.
    Study.objects.select_for_update().get(pk=study.pk)
    taken = set(CandidateModel.objects.filter(study=study).values_list("alias", flat=True))
    index = 0
    while alias_for_index(index) in taken:
        index += 1
    return CandidateModel.objects.create(
        study=study,
        name=name,
        identifier=identifier or name,
        route=route,
        providers=providers or [],
        alias=alias_for_index(index),
    )
