"""Content of the demo study (slug ``demo``): synthetic clips, fictional models, planted captions.

The data is JSON in ``fixtures/demo/`` (``clips``, ``models``, ``captions``, ``references``; its
README says what each clip shows and what each model gets wrong); this module loads it with its
types. Pure, no Django: :mod:`annotation.services.demo` turns it into database rows and renders
the clips with :func:`annotation.media.video.synthesize_clip` (``kind``, ``duration`` and ``params`` of
each clip are its arguments). Every caption describes what the synthetic video really shows (see
``annotation.media.video.SYNTHETIC_KINDS``), with errors planted on purpose so that a demo annotator
meets every failure mode of the taxonomy at the level where it belongs. ``planted`` lists them:

- ``{"unit": "overview", "mode": ..., "note": ...}`` for the overview paragraph,
- ``{"unit": "window", "index": i, "mode": ..., "note": ...}`` for window ``i`` (0-based),
- ``{"unit": "caption", "mode": "segmentation", "note": ...}``: segmentation is judged once per
  caption, never per window.

An empty ``planted`` list means the caption is correct as written. The model names, identifiers
and providers are invented; they stand for no real product.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal, NotRequired, TypedDict

__all__ = [
    "DEMO_CAPTIONS",
    "DEMO_CLIPS",
    "DEMO_MODELS",
    "DEMO_REFERENCES",
    "DEMO_STUDY_SLUG",
    "PROPERTY_VALUES",
    "TAXONOMY_MODES",
]

DEMO_STUDY_SLUG = "demo"

#: Keys of the frozen failure taxonomy (PROTOCOL.md section 2).
TAXONOMY_MODES: tuple[str, ...] = (
    "factual",
    "omission",
    "camera",
    "segmentation",
    "inference",
    "temporal",
)

#: Clip property values the demo uses, following the lists in PROTOCOL.md section 1.
PROPERTY_VALUES: dict[str, tuple[str, ...]] = {
    "content_type": (
        "domestic_lifestyle", "urban_vehicle", "nature_outdoor", "product_object",
        "people_activity", "unclear",
    ),
    "camera_platform": ("handheld", "tripod_static", "vehicle_mounted", "unclear"),
    "scene_complexity": ("low", "medium", "high", "unclear"),
    "shot_scale": ("extreme_wide", "wide", "medium", "close", "extreme_close", "unclear"),
    "motion_intensity": ("low", "medium", "high", "unclear"),
}  # fmt: skip


class ClipProperties(TypedDict):
    content_type: str
    camera_platform: str
    scene_complexity: str
    shot_scale: str
    motion_intensity: str


class DemoClip(TypedDict):
    name: str
    kind: str
    duration: float
    params: dict[str, float | int]
    properties: ClipProperties
    manipulated: bool


class DemoModel(TypedDict):
    name: str
    identifier: str
    route: str
    providers: list[str]


class Window(TypedDict):
    start: float
    end: float
    scene: str
    shot: str


class CaptionMeta(TypedDict):
    input_tokens_per_second: int
    retried: bool
    re_encoded: bool


class Planted(TypedDict):
    unit: Literal["overview", "window", "caption"]
    mode: str
    note: str
    index: NotRequired[int]


class DemoCaption(TypedDict):
    clip: str
    model: str
    overview: str
    windows: list[Window]
    meta: CaptionMeta
    planted: list[Planted]


class DemoReference(TypedDict):
    clip: str
    source: str
    language: str
    text: str


DEMO_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "demo"


def _load(name: str) -> Any:
    """The demo's ``name`` collection as stored in ``fixtures/demo/<name>.json``."""
    with (DEMO_FIXTURES / f"{name}.json").open(encoding="utf-8") as file:
        return json.load(file)


DEMO_CLIPS: list[DemoClip] = _load("clips")
DEMO_MODELS: list[DemoModel] = _load("models")
#: Every clip x every model.
DEMO_CAPTIONS: list[DemoCaption] = _load("captions")
#: An expert reference description per clip.
DEMO_REFERENCES: list[DemoReference] = _load("references")
