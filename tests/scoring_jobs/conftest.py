"""Studies to score, built through the services (clips stand in without video files)."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

# Models load from installed packages only (see tests/scoring/conftest.py).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

OVERVIEW = "A man walks a brown dog along a beach at sunset."
CORRECTED_OVERVIEW = "A woman walks a black dog along a beach in the morning."
WINDOWS = [
    {"start": 0, "end": 3, "scene": "A man and a dog on the sand.", "shot": "Wide shot."},
    {"start": 3, "end": 6, "scene": "The dog runs into the waves.", "shot": "Handheld close-up."},
]


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    """The personas' passwords are hashed with a fast hasher: PBKDF2 costs half a second each."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def make_clip(study, name: str, duration: float = 6.0):
    """A clip row without a video file: scoring only reads texts."""
    from annotation.models import Clip

    return Clip.objects.create(
        study=study,
        name=name,
        original=f"clips/original/{name}.mp4",
        original_filename=f"{name}.mp4",
        size_bytes=1000,
        sha256=hashlib.sha256(name.encode()).hexdigest(),
        duration=duration,
        fps=25,
        width=160,
        height=120,
        codec="h264",
    )


def import_captions(study, records) -> None:
    from annotation.services.captions import captions_import_jsonl

    captions_import_jsonl(study=study, data="\n".join(map(json.dumps, records)).encode())


def import_references(study, records) -> None:
    from annotation.services.captions import references_import

    references_import(study=study, data="\n".join(map(json.dumps, records)).encode())


@pytest.fixture
def scored_caption(study, personas):
    """Clip "beach" with one caption (two windows) by model m1."""
    from annotation.models import Caption

    make_clip(study, "beach")
    import_captions(
        study, [{"clip": "beach", "model": "m1", "overview": OVERVIEW, "windows": WINDOWS}]
    )
    return Caption.objects.get(clip__name="beach")


def finish_verdict(annotation, personas, *, amend: dict | None = None):
    """Drive an annotation through a rejected overview, one rejected window, and QC approval
    (or an amendment with `amend`). Returns the approved annotation."""
    from annotation.services.workflow import (
        annotation_open,
        annotation_save,
        annotation_submit,
        overview_lock,
        review_amend,
        review_approve,
        review_claim,
    )

    annotator, reviewer = personas["annotator"], personas["reviewer"]
    annotation = annotation_open(annotation=annotation, actor=annotator)

    def save(item, **changes):
        return annotation_save(
            annotation_id=item.pk, actor=annotator, base_version=item.version, changes=changes
        )

    annotation = save(
        annotation, overview={"verdict": "reject", "text": CORRECTED_OVERVIEW, "modes": ["factual"]}
    )
    annotation = overview_lock(
        annotation_id=annotation.pk, actor=annotator, base_version=annotation.version
    )
    annotation = save(
        annotation,
        windows=[
            {
                "index": 0,
                "verdict": "reject",
                "scene": "A woman and a dog on the sand.",
                "modes": ["factual"],
            },
            {"index": 1, "verdict": "accept"},
        ],
        segmentation={"verdict": "accept"},
    )
    annotation = annotation_submit(
        annotation_id=annotation.pk, actor=annotator, base_version=annotation.version
    )
    review_claim(annotation_id=annotation.pk, actor=reviewer)
    if amend is not None:
        return review_amend(annotation_id=annotation.pk, actor=reviewer, changes=amend)
    return review_approve(annotation_id=annotation.pk, actor=reviewer)


@pytest.fixture
def assigned(study, personas, scored_caption):
    """The annotator's (not yet opened) annotation of `scored_caption`."""
    from annotation.services.workflow import annotations_assign

    annotations_assign(study=study, annotators=[personas["annotator"]], captions=[scored_caption])
    return scored_caption.annotations.get()


@pytest.fixture
def approved(assigned, personas):
    """`scored_caption`'s verdict, approved (on_commit hooks not run: no job queued)."""
    return finish_verdict(assigned, personas)


@pytest.fixture
def fast_scoring(settings):
    """Verdict jobs score edit size only: no model to load."""
    settings.SCORING_VERDICT_METRICS = ["words_changed", "char_similarity", "near_total"]
    settings.SCORING_CHUNK_SIZE = 2
    return settings


@pytest.fixture
def closed_port():
    """A local TCP port nobody listens on."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
