"""Gold verdicts imported from a file in the bundle's annotation format (docs/gold.md).

One JSON object per line, as a study bundle writes an annotation: ``clip`` (its name), ``model``
(the candidate model's alias or name) and ``passes.annotator`` (``overview {verdict, text,
modes}``, ``windows [{index, verdict, scene, shot, start, end, modes}]``, ``segmentation
{verdict, modes, windows}``); other fields of a bundle's annotation are ignored. Each line
becomes a gold item whose gold verdict the importing admin made, through the workspace's own
services (open, save, lock, submit), so an imported verdict meets every rule a verdict made by
hand meets. All or nothing: one refused line and nothing is stored, with every line's reason.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from annotation.errors import ImportRefused, ServiceError
from annotation.interchange.formats.strict_json import json_loads_strict
from annotation.models import Caption, GoldItem, Study
from annotation.services import gold
from annotation.services.annotating import annotation_open, annotation_save, annotation_submit, overview_lock
from annotation.services.study_state import Write, study_require

MAX_LINES = 5000


def _caption(study: Study, record: dict[str, Any]) -> Caption:
    clip, model = record.get("clip"), record.get("model")
    if not isinstance(clip, str) or not isinstance(model, str):
        raise ServiceError("give the caption's clip (its name) and model (alias or name) as text")
    caption = (
        Caption.objects.filter(clip__study=study, clip__name=clip, model__alias=model).first()
        or Caption.objects.filter(clip__study=study, clip__name=clip, model__name=model).first()
    )
    if caption is None:
        raise ServiceError(f"study {study.name} has no caption of model {model[:60]!r} for clip {clip[:60]!r}")
    return caption


def _one(study: Study, actor, record: Any) -> GoldItem:
    if not isinstance(record, dict):
        raise ServiceError("a line is one JSON object (an annotation as a bundle writes it)")
    correction = (record.get("passes") or {}).get("annotator") if isinstance(record.get("passes"), dict) else None
    if not isinstance(correction, dict):
        raise ServiceError("passes.annotator: give the gold verdict as the annotator pass")
    caption = _caption(study, record)
    item = gold.gold_start(study=study, actor=actor, caption_id=caption.pk)
    item.source = "import"
    item.save(update_fields=["source"])
    annotation = annotation_open(annotation=item.gold, actor=actor)
    annotation = annotation_save(
        annotation_id=annotation.pk,
        actor=actor,
        base_version=annotation.version,
        changes={"overview": correction.get("overview") or {}},
    )
    annotation = overview_lock(annotation_id=annotation.pk, actor=actor, base_version=annotation.version)
    rest = {key: correction[key] for key in ("windows", "segmentation") if key in correction}
    if rest:
        annotation = annotation_save(
            annotation_id=annotation.pk, actor=actor, base_version=annotation.version, changes=rest
        )
    annotation_submit(annotation_id=annotation.pk, actor=actor, base_version=annotation.version)
    item.gold.refresh_from_db()
    return item


def gold_import(*, study: Study, actor, data: bytes) -> list[GoldItem]:
    """Import gold verdicts (see the module docstring); ImportRefused lists every line refused."""
    study_require(study, Write.GOLD)
    study_require(study, Write.WORK)  # gold verdicts are made as work is: while the study runs
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ImportRefused([f"the file is not UTF-8 text (byte {exc.start})"]) from None
    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if not lines:
        raise ImportRefused(["the file holds no gold verdict"])
    if len(lines) > MAX_LINES:
        raise ImportRefused([f"at most {MAX_LINES:,} gold verdicts in one file; this one has {len(lines):,}"])
    errors: list[str] = []
    items: list[GoldItem] = []
    with transaction.atomic():
        for n, line in lines:
            try:
                record = json_loads_strict(line)
            except ValueError as exc:
                errors.append(f"line {n}: not JSON ({exc})")
                continue
            try:
                with transaction.atomic():
                    items.append(_one(study, actor, record))
            except ServiceError as exc:
                message = "; ".join(f"{k}: {v}" for k, v in exc.errors.items()) if hasattr(exc, "errors") else str(exc)
                errors.append(f"line {n}: {message}")
        if errors:
            raise ImportRefused(errors)
    return items
