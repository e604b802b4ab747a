"""Taxonomy versions: freezing on first use, editing only while unused, new versions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from django.db import transaction
from django.utils import timezone

from annotation.errors import ServiceError, TaxonomyFrozen
from annotation.models import FailureMode, TaxonomyVersion
from annotation.rules.taxonomy import (
    DEFAULT_MODES,
    DEFAULT_PRECEDENCE_RULES,
    DEFAULT_TAXONOMY_NAME,
    DEFAULT_TAXONOMY_VERSION,
    taxonomy_hash,
)

EDITABLE_MODE_FIELDS = ("name", "definition", "decision_test", "level")


def taxonomy_default() -> TaxonomyVersion:
    """The default taxonomy, version 1; migration 0003 creates it, this recreates it if missing
    (an emptied database, such as after a test flush)."""
    existing = TaxonomyVersion.objects.filter(
        name=DEFAULT_TAXONOMY_NAME, version=DEFAULT_TAXONOMY_VERSION
    ).first()
    if existing:
        return existing
    return taxonomy_create_version(
        name=DEFAULT_TAXONOMY_NAME,
        modes=DEFAULT_MODES,
        precedence_rules=DEFAULT_PRECEDENCE_RULES,
        description="The six failure modes of the human-correction protocol.",
    )


MODE_FIELDS = ("key", "name", "definition", "decision_test", "level")


def taxonomy_modes(taxonomy: TaxonomyVersion) -> tuple[dict[str, str], ...]:
    """The version's failure modes in order, as plain data. A frozen version never changes,
    so each web process reads its modes once (keyed by the content hash taken at freezing);
    a draft is read every time."""
    if taxonomy.is_frozen:
        return _frozen_modes(taxonomy.pk, taxonomy.content_hash)
    return _modes_of(taxonomy.pk)


def _modes_of(taxonomy_id: int) -> tuple[dict[str, str], ...]:
    rows = FailureMode.objects.filter(taxonomy_id=taxonomy_id).order_by("position").values(*MODE_FIELDS)
    return tuple(rows)


@lru_cache(maxsize=32)
def _frozen_modes(taxonomy_id: int, content_hash: str) -> tuple[dict[str, str], ...]:
    return _modes_of(taxonomy_id)


def taxonomy_compute_hash(*, taxonomy: TaxonomyVersion) -> str:
    modes = taxonomy.modes.order_by("position").values("key", "name", "definition", "decision_test", "level")
    return taxonomy_hash(list(modes), taxonomy.precedence_rules)


@transaction.atomic
def taxonomy_freeze(*, taxonomy: TaxonomyVersion) -> TaxonomyVersion:
    """Mark the version as in use; from now on it can never change. Idempotent."""
    locked = TaxonomyVersion.objects.select_for_update().get(pk=taxonomy.pk)
    if locked.frozen_at is None:
        locked.content_hash = taxonomy_compute_hash(taxonomy=locked)
        locked.frozen_at = timezone.now()
        locked.save(update_fields=["content_hash", "frozen_at"])
    return locked


def _refuse_if_frozen(taxonomy: TaxonomyVersion) -> None:
    if taxonomy.is_frozen:
        raise TaxonomyFrozen(
            f"Taxonomy {taxonomy} is in use since {taxonomy.frozen_at:%Y-%m-%d %H:%M} UTC and "
            "cannot change; create a new version instead."
        )


@transaction.atomic
def taxonomy_mode_update(*, mode: FailureMode, **changes: Any) -> FailureMode:
    """Change a mode's wording while its taxonomy is not yet in use."""
    taxonomy = TaxonomyVersion.objects.select_for_update().get(pk=mode.taxonomy_id)
    _refuse_if_frozen(taxonomy)
    unknown = set(changes) - set(EDITABLE_MODE_FIELDS)
    if unknown:
        raise ServiceError(f"Cannot change {', '.join(sorted(unknown))} of a failure mode.")
    for field, value in changes.items():
        setattr(mode, field, value)
    mode.full_clean()
    mode.save()
    taxonomy.content_hash = taxonomy_compute_hash(taxonomy=taxonomy)
    taxonomy.save(update_fields=["content_hash"])
    return mode


@transaction.atomic
def taxonomy_rules_update(*, taxonomy: TaxonomyVersion, precedence_rules: list[dict[str, str]]) -> TaxonomyVersion:
    locked = TaxonomyVersion.objects.select_for_update().get(pk=taxonomy.pk)
    _refuse_if_frozen(locked)
    locked.precedence_rules = precedence_rules
    locked.content_hash = taxonomy_compute_hash(taxonomy=locked)
    locked.save(update_fields=["precedence_rules", "content_hash"])
    return locked


@transaction.atomic
def taxonomy_create_version(
    *,
    name: str,
    modes: Sequence[Mapping[str, str]],
    precedence_rules: Sequence[Mapping[str, str]] = (),
    description: str = "",
) -> TaxonomyVersion:
    """A new version (the next number for `name`) with the given modes."""
    keys = [mode["key"] for mode in modes]
    if len(set(keys)) != len(keys):
        raise ServiceError(f"Mode keys must be unique, got {keys}.")
    for rule in precedence_rules:
        missing = {rule.get("prefer"), rule.get("over")} - set(keys)
        if missing:
            raise ServiceError(f"Precedence rule names unknown modes: {sorted(map(str, missing))}.")
    latest = TaxonomyVersion.objects.filter(name=name).order_by("-version").first()
    taxonomy = TaxonomyVersion.objects.create(
        name=name,
        version=(latest.version + 1) if latest else 1,
        description=description,
        precedence_rules=[dict(rule) for rule in precedence_rules],
    )
    for position, mode in enumerate(modes):
        FailureMode.objects.create(taxonomy=taxonomy, position=position, **{
            field: mode[field] for field in ("key", *EDITABLE_MODE_FIELDS)
        })
    taxonomy.content_hash = taxonomy_compute_hash(taxonomy=taxonomy)
    taxonomy.save(update_fields=["content_hash"])
    return taxonomy
