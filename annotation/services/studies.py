"""Studies, their members and their candidate models."""

from __future__ import annotations

import string

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from annotation.models import CandidateModel, Membership, Study, TaxonomyVersion
from annotation.services.errors import ServiceError
from annotation.services.taxonomy import taxonomy_default


@transaction.atomic
def study_create(
    *,
    slug: str,
    name: str,
    taxonomy: TaxonomyVersion | None = None,
    description: str = "",
    word_thresholds: list[int] | None = None,
    near_total_cut: float | None = None,
    length_band: float | None = None,
) -> Study:
    if Study.objects.filter(slug=slug).exists():
        raise ServiceError(f"A study with slug {slug!r} already exists.")
    study = Study(slug=slug, name=name, description=description, taxonomy=taxonomy or taxonomy_default())
    if word_thresholds is not None:
        if not word_thresholds or any(t < 1 for t in word_thresholds):
            raise ServiceError("Word thresholds must be positive whole numbers.")
        study.word_thresholds = sorted(set(word_thresholds))
    if near_total_cut is not None:
        study.near_total_cut = near_total_cut
    if length_band is not None:
        study.length_band = length_band
    study.full_clean()
    study.save()
    return study


def membership_grant(*, study: Study, user: AbstractBaseUser, role: str) -> Membership:
    """Give `user` the role in `study` (idempotent)."""
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
