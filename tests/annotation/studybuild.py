"""Build a small study with annotations in any workflow state, without encoding video.

Clips are stored as stand-in files (the tests that use these never decode them);
everything after the clips goes through the services, as the product does.
"""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta

from django.core.files.base import ContentFile
from django.utils import timezone

from annotation.models import Annotation, Caption, Clip, Study
from annotation.services.captions import captions_import_jsonl
from annotation.services.workflow import (
    annotation_open,
    annotation_save,
    annotation_submit,
    overview_lock,
)

SECRET_MODEL = "Zebrafish-VLM-7B"  # a model name that must never reach annotators or reviewers


def fake_clip(study: Study, name: str, *, duration: float = 6.0) -> Clip:
    payload = f"stand-in video {study.slug}/{name}".encode()
    clip = Clip(
        study=study,
        name=name,
        original_filename=f"{name}.mp4",
        size_bytes=len(payload),
        sha256=hashlib.sha256(payload).hexdigest(),
        duration=duration,
        fps=25.0,
        width=160,
        height=120,
        codec="h264",
        pix_fmt="yuv420p",
        container="mov,mp4,m4a,3gp,3g2,mj2",
    )
    # In the study's own media folders, as clip imports store them.
    clip.original.save(f"{study.slug}/{name}.mp4", ContentFile(payload), save=False)
    clip.poster.save(f"{study.slug}/{name}.jpg", ContentFile(b"stand-in poster"), save=False)
    clip.save()
    return clip


def caption_record(clip: str, model: str = SECRET_MODEL, words: str = "counter") -> dict:
    return {
        "clip": clip,
        "model": model,
        "overview": f"A test card with a {words} that counts up.",
        "windows": [
            {"start": 0, "end": 2, "scene": "Colour bars and a counter.", "shot": "Static frame."},
            {"start": 2, "end": 4, "scene": "The counter keeps running.", "shot": "Static frame."},
            {"start": 4, "end": 6, "scene": "The counter reaches five.", "shot": "Static frame."},
        ],
        "meta": {"input_tokens_per_second": 120.5},
    }


def captions_add(study: Study, records: list[dict]) -> list[Caption]:
    captions_import_jsonl(study=study, data="\n".join(json.dumps(r) for r in records).encode())
    return list(Caption.objects.filter(clip__study=study).order_by("clip__name", "model__name"))


def worked(annotation: Annotation, seconds: float) -> None:
    """As if the annotator had worked `seconds` since their last save: a save credits at
    most the wall time since the previous one (or the item's opening) as active time."""
    if seconds:
        before = timezone.now() - timedelta(seconds=seconds + 1)
        Annotation.objects.filter(pk=annotation.pk).update(last_saved_at=before, active_until=before)


def save(annotation: Annotation, actor, **changes) -> Annotation:
    worked(annotation, changes.get("active_seconds", 0))
    return annotation_save(
        annotation_id=annotation.pk, actor=actor, base_version=annotation.version, changes=changes
    )


def complete(
    annotation: Annotation,
    annotator,
    *,
    overview: dict | None = None,
    windows: list[dict] | None = None,
    segmentation: dict | None = None,
    active_seconds: float = 0.0,
) -> Annotation:
    """Open the annotation and drive it through a full, valid annotator pass to submitted."""
    annotation = annotation_open(annotation=annotation, actor=annotator)
    overview = overview or {
        "verdict": "reject",
        "text": "A test card with a counter.",
        "modes": ["factual"],
    }
    annotation = save(annotation, annotator, overview=overview, active_seconds=active_seconds)
    annotation = overview_lock(
        annotation_id=annotation.pk, actor=annotator, base_version=annotation.version
    )
    annotation = save(
        annotation,
        annotator,
        windows=windows
        or [
            {"index": 0, "verdict": "accept"},
            {
                "index": 1,
                "verdict": "reject",
                "scene": "The counter runs.",
                "end": 3.5,
                "modes": ["temporal"],
            },
            {"index": 2, "verdict": "accept"},
        ],
        segmentation=segmentation or {"verdict": "accept"},
    )
    return annotation_submit(
        annotation_id=annotation.pk, actor=annotator, base_version=annotation.version
    )
