"""Content of the demo study (slug ``demo``): synthetic clips, fictional models, planted captions.

Pure data, no Django: a loader turns it into database rows and renders the clips with
:func:`annotation.media.synthesize_clip` (``kind``, ``duration`` and ``params`` of each clip are
its arguments). Every caption describes what the synthetic video really shows (see
``annotation.media.SYNTHETIC_KINDS``), with errors planted on purpose so that a demo annotator
meets every failure mode of the taxonomy at the level where it belongs. ``planted`` lists them:

- ``{"unit": "overview", "mode": ..., "note": ...}`` for the overview paragraph,
- ``{"unit": "window", "index": i, "mode": ..., "note": ...}`` for window ``i`` (0-based),
- ``{"unit": "caption", "mode": "segmentation", "note": ...}``: segmentation is judged once per
  caption, never per window.

An empty ``planted`` list means the caption is correct as written. The model names, identifiers
and providers are invented; they stand for no real product.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

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


# ---------------------------------------------------------------------------------------------
# Clips

DEMO_CLIPS: list[DemoClip] = [
    {
        "name": "demo-shapes",
        "kind": "moving_shapes",
        "duration": 8.0,
        "params": {},
        "properties": {
            "content_type": "product_object",
            "camera_platform": "tripod_static",
            "scene_complexity": "low",
            "shot_scale": "wide",
            "motion_intensity": "medium",
        },
        "manipulated": False,
    },
    {
        "name": "demo-pan",
        "kind": "camera_pan",
        "duration": 10.0,
        "params": {},
        "properties": {
            "content_type": "nature_outdoor",
            "camera_platform": "handheld",
            "scene_complexity": "medium",
            "shot_scale": "wide",
            "motion_intensity": "medium",
        },
        "manipulated": False,
    },
    {
        "name": "demo-cut",
        "kind": "hard_cut",
        "duration": 9.0,
        "params": {"cut_at": 5.4},
        # Abstract colour fields: neither the content type nor the shot scale can be told.
        "properties": {
            "content_type": "unclear",
            "camera_platform": "tripod_static",
            "scene_complexity": "low",
            "shot_scale": "unclear",
            "motion_intensity": "low",
        },
        "manipulated": False,
    },
    {
        "name": "demo-zoom",
        "kind": "zoom",
        "duration": 8.0,
        "params": {},
        "properties": {
            "content_type": "product_object",
            "camera_platform": "tripod_static",
            "scene_complexity": "low",
            "shot_scale": "medium",
            "motion_intensity": "low",
        },
        "manipulated": False,
    },
    {
        "name": "demo-lamp",
        "kind": "static_tripod",
        "duration": 10.0,
        "params": {},
        "properties": {
            "content_type": "domestic_lifestyle",
            "camera_platform": "tripod_static",
            "scene_complexity": "low",
            "shot_scale": "medium",
            "motion_intensity": "low",
        },
        "manipulated": False,
    },
    {
        "name": "demo-count",
        "kind": "counting",
        "duration": 7.0,
        "params": {"count": 5},
        "properties": {
            "content_type": "product_object",
            "camera_platform": "tripod_static",
            "scene_complexity": "low",
            "shot_scale": "close",
            "motion_intensity": "low",
        },
        # Stands in for the study's manipulated controls, so that analyses excluding them have
        # something to exclude in the demo.
        "manipulated": True,
    },
]

# ---------------------------------------------------------------------------------------------
# Candidate models (fictional)

HALCYON = "halcyon/vl-34b-2026-03"
MIRRORFIELD = "mirrorfield/caption-pro-1.2"
PEBBLECAST = "pebblecast/vision-mini-8b"

DEMO_MODELS: list[DemoModel] = [
    {
        "name": "Halcyon-VL 34B",
        "identifier": HALCYON,
        "route": "direct",
        "providers": ["Halcyon Labs API"],
    },
    {
        "name": "Mirrorfield Caption Pro",
        "identifier": MIRRORFIELD,
        "route": "aggregator",
        "providers": ["Tollgate Router", "Mirrorfield Cloud"],
    },
    {
        "name": "Pebblecast Vision Mini",
        "identifier": PEBBLECAST,
        "route": "self_hosted",
        "providers": ["on-premises GPU pool"],
    },
]


def _meta(tokens: int, *, retried: bool = False, re_encoded: bool = False) -> CaptionMeta:
    return {"input_tokens_per_second": tokens, "retried": retried, "re_encoded": re_encoded}


def _w(start: float, end: float, scene: str, shot: str) -> Window:
    return {"start": start, "end": end, "scene": scene, "shot": shot}


# Tokens per second of video each model was fed (Table 14 style generation details).
_HALCYON_TPS, _MIRRORFIELD_TPS, _PEBBLECAST_TPS = 290, 64, 128

# ---------------------------------------------------------------------------------------------
# Captions: every clip x every model. Profiles, loosely: Halcyon misreads the camera and
# miscounts, Mirrorfield infers and garbles timing, Pebblecast omits and windows on a grid.

DEMO_CAPTIONS: list[DemoCaption] = [
    # --- demo-shapes: red square 0-4 s left to right (upper), teal bar 4-8 s right to left ---
    {
        "clip": "demo-shapes",
        "model": HALCYON,
        "overview": (
            "Against a dark navy background with a grey strip along the bottom, a red square "
            "glides from the left edge to the right edge of the upper frame during the first "
            "four seconds and stops there. Halfway through, a teal bar appears at the lower "
            "right and slides steadily to the left edge by the end. The camera does not move."
        ),
        "windows": [
            _w(
                0.0,
                4.0,
                "A red square slides from the left edge to the right edge across the upper part "
                "of a dark navy frame.",
                "Static wide shot; no camera movement.",
            ),
            _w(
                4.0,
                8.0,
                "The red square stays at the right edge; a teal bar appears at the lower right "
                "and slides to the left edge.",
                "Same static wide shot, no cuts.",
            ),
        ],
        "meta": _meta(_HALCYON_TPS),
        "planted": [],
    },
    {
        "clip": "demo-shapes",
        "model": MIRRORFIELD,
        "overview": (
            "A teal bar slides from right to left along the lower part of a dark navy frame, and "
            "once it has reached the left edge a red square slides from left to right across the "
            "upper part. The framing stays fixed throughout."
        ),
        "windows": [
            _w(
                0.0,
                8.0,
                "The teal bar crosses the lower frame first, then the red square crosses the "
                "upper frame.",
                "Static wide shot.",
            ),
        ],
        "meta": _meta(_MIRRORFIELD_TPS),
        "planted": [
            {
                "unit": "overview",
                "mode": "temporal",
                "note": "order reversed: the red square moves first (0-4 s), the teal bar after",
            },
            {
                "unit": "window",
                "index": 0,
                "mode": "temporal",
                "note": "same reversed order inside the window",
            },
            {
                "unit": "caption",
                "mode": "segmentation",
                "note": "a single window merges the two movements (0-4 s and 4-8 s)",
            },
        ],
    },
    {
        "clip": "demo-shapes",
        "model": PEBBLECAST,
        "overview": (
            "A red square slides from left to right across the upper part of a dark navy frame "
            "and comes to rest at the right edge. The shot is static."
        ),
        "windows": [
            _w(
                0.0,
                4.0,
                "A red square slides from the left edge to the right edge across the upper part "
                "of the frame.",
                "Static wide shot.",
            ),
            _w(
                4.0,
                8.0,
                "The red square rests at the right edge of the frame.",
                "Static wide shot.",
            ),
        ],
        "meta": _meta(_PEBBLECAST_TPS),
        "planted": [
            {
                "unit": "overview",
                "mode": "omission",
                "note": "the teal bar crossing the lower frame in the second half is missing",
            },
            {
                "unit": "window",
                "index": 1,
                "mode": "omission",
                "note": "the teal bar appearing at 4 s and sliding left is missing",
            },
        ],
    },
    # --- demo-pan: the camera pans right over static hills, pillar, yellow square, blue block ---
    {
        "clip": "demo-pan",
        "model": HALCYON,
        "overview": (
            "On a grassy hillside under a blue sky, a tall red pillar, a yellow square and a dark "
            "blue block slide one after another from right to left across the frame, as if "
            "carried along a conveyor. The camera stays still and watches them pass."
        ),
        "windows": [
            _w(
                0.0,
                2.6,
                "A tall red pillar stands on green wavy hills under a blue sky.",
                "Wide shot; the camera pans right and the pillar leaves the frame on the left.",
            ),
            _w(
                2.6,
                6.8,
                "A yellow square glides from right to left across the hills.",
                "Static wide shot.",
            ),
            _w(
                6.8,
                10.0,
                "A dark blue block stands on the hills, ending near the centre of the frame.",
                "The pan to the right continues to the end, bringing the block in from the right.",
            ),
        ],
        "meta": _meta(_HALCYON_TPS),
        "planted": [
            {
                "unit": "overview",
                "mode": "camera",
                "note": "pan described as objects moving; the camera pans over static objects",
            },
            {
                "unit": "window",
                "index": 1,
                "mode": "camera",
                "note": "the yellow square is static; the pan is read as the square moving (camera "
                "takes precedence over factual)",
            },
        ],
    },
    {
        "clip": "demo-pan",
        "model": MIRRORFIELD,
        "overview": (
            "The camera pans steadily to the right across green hills under a blue sky, passing a "
            "red pillar, then a yellow square, then a dark blue block. The red pillar is a trail "
            "marker placed to guide hikers towards the blue shelter."
        ),
        "windows": [
            _w(
                0.0,
                2.6,
                "A tall red pillar stands on green hills under a blue sky.",
                "Wide shot panning right; the pillar drifts left and leaves the frame.",
            ),
            _w(
                2.6,
                6.8,
                "A yellow square stands still on the hills.",
                "The pan continues; the square crosses the frame from right to left.",
            ),
            _w(
                6.8,
                10.0,
                "A dark blue block stands on the hills.",
                "The pan continues; the block enters from the right and ends near the centre.",
            ),
        ],
        "meta": _meta(_MIRRORFIELD_TPS),
        "planted": [
            {
                "unit": "overview",
                "mode": "inference",
                "note": "purpose (trail marker, guiding hikers) and identity (shelter) asserted "
                "without support",
            },
        ],
    },
    {
        "clip": "demo-pan",
        "model": PEBBLECAST,
        "overview": (
            "A slow pan to the right over a static landscape of green wavy hills and blue sky. A "
            "red pillar near the centre slides out of view on the left within the first three "
            "seconds, a yellow square crosses the frame in the middle of the clip, and a dark "
            "blue block comes in from the right near the end. Nothing in the scene moves."
        ),
        "windows": [
            _w(
                0.0,
                2.6,
                "A red pillar stands on green hills.",
                "The camera pans right; the pillar drifts to the left edge and out of frame.",
            ),
            _w(
                2.6,
                6.8,
                "A yellow square on the hills.",
                "Continuing pan; the square, at the right edge at first, passes the centre and "
                "nears the left edge.",
            ),
            _w(
                6.8,
                10.0,
                "A dark blue block on the hills.",
                "Continuing pan; the block enters on the right and ends near the centre.",
            ),
        ],
        "meta": _meta(_PEBBLECAST_TPS),
        "planted": [],
    },
    # --- demo-cut: hard cut at 5.4 s; yellow square on green, then magenta square falling ---
    {
        "clip": "demo-cut",
        "model": HALCYON,
        "overview": (
            "Two shots joined by a hard cut. In the first, a yellow square moves slowly to the "
            "right across a green field. After the cut, at about 5.4 seconds, a magenta square "
            "falls from the top to the bottom of a dark slate frame. The camera is static in "
            "both shots."
        ),
        "windows": [
            _w(
                0.0,
                5.4,
                "A yellow square moves slowly from the left side to just right of centre across a "
                "green field.",
                "Static wide shot.",
            ),
            _w(
                5.4,
                9.0,
                "A magenta square falls from the top edge to the bottom edge of a dark slate "
                "frame.",
                "Hard cut at 5.4 s to a new static shot.",
            ),
        ],
        "meta": _meta(_HALCYON_TPS),
        "planted": [],
    },
    {
        "clip": "demo-cut",
        "model": MIRRORFIELD,
        "overview": (
            "A yellow square drifts right across a green field; a hard cut at about 5.4 seconds "
            "switches to a dark slate background where a magenta square falls from top to "
            "bottom. Both shots are static."
        ),
        "windows": [
            _w(
                0.0,
                5.4,
                "A yellow square drifts to the right across a green field.",
                "Static shot.",
            ),
            _w(
                5.4,
                9.0,
                "A magenta square falls from the top to the bottom of a dark slate frame, "
                "dropped by someone standing just out of view.",
                "Hard cut to a second static shot.",
            ),
        ],
        "meta": _meta(_MIRRORFIELD_TPS),
        "planted": [
            {
                "unit": "window",
                "index": 1,
                "mode": "inference",
                "note": "cause (someone dropped it) asserted; nobody is visible",
            },
        ],
    },
    {
        "clip": "demo-cut",
        "model": PEBBLECAST,
        "overview": (
            "On a green field a yellow square drifts to the right; then the field turns dark and "
            "the square changes colour to magenta and falls to the bottom of the frame."
        ),
        # Windows on a fixed 3 s grid: the cut at 5.4 s falls inside the second window.
        "windows": [
            _w(
                0.0,
                3.0,
                "A yellow square moves slowly to the right across a green field.",
                "Static wide shot.",
            ),
            _w(
                3.0,
                6.0,
                "The yellow square continues to the right across the green field.",
                "Static wide shot.",
            ),
            _w(
                6.0,
                9.0,
                "A magenta square falls towards the bottom of a dark slate background.",
                "Static shot.",
            ),
        ],
        "meta": _meta(_PEBBLECAST_TPS, re_encoded=True),
        "planted": [
            {
                "unit": "overview",
                "mode": "camera",
                "note": "the hard cut at 5.4 s is described as the field darkening and the square "
                "transforming",
            },
            {
                "unit": "caption",
                "mode": "segmentation",
                "note": "windows sit on a fixed 3 s grid and miss the cut at 5.4 s",
            },
        ],
    },
    # --- demo-zoom: static target on a cream wall, steady zoom-in to 2.5x ---
    {
        "clip": "demo-zoom",
        "model": HALCYON,
        "overview": (
            "A target of nested blue, white and red squares on a cream wall, with small black "
            "squares near the corners. The camera zooms in steadily throughout, pushing the "
            "corner squares out of frame within the first few seconds until the target fills "
            "most of the picture."
        ),
        "windows": [
            _w(
                0.0,
                2.5,
                "A target of nested squares (blue, white, red centre) on a cream wall, with small "
                "black squares near the four corners.",
                "Medium shot; a slow zoom-in begins and the corner squares slide out of frame.",
            ),
            _w(
                2.5,
                8.0,
                "The target swells and moves towards the viewer until it fills most of the frame.",
                "Static framing.",
            ),
        ],
        "meta": _meta(_HALCYON_TPS, re_encoded=True),
        "planted": [
            {
                "unit": "window",
                "index": 1,
                "mode": "camera",
                "note": "the zoom-in is read as the target approaching; the target does not move",
            },
        ],
    },
    {
        "clip": "demo-zoom",
        "model": MIRRORFIELD,
        "overview": (
            "A still target of nested squares, blue outside, then white, with a red centre, hangs "
            "on a cream wall. The camera zooms in smoothly for the whole clip: four small black "
            "squares near the corners leave the frame early on, and by the end the target fills "
            "most of the frame height."
        ),
        "windows": [
            _w(
                0.0,
                2.5,
                "A nested-square target on a cream wall; small black squares near the corners.",
                "The camera starts zooming in; the corner squares leave the frame.",
            ),
            _w(
                2.5,
                8.0,
                "The target, unchanged.",
                "The zoom-in continues until the target fills most of the frame height.",
            ),
        ],
        "meta": _meta(_MIRRORFIELD_TPS),
        "planted": [],
    },
    {
        "clip": "demo-zoom",
        "model": PEBBLECAST,
        "overview": (
            "A target made of nested blue, white and red squares hangs on a cream wall, with four "
            "small black squares near the corners."
        ),
        "windows": [
            _w(
                0.0,
                2.5,
                "A target of nested blue, white and red squares on a cream wall; black squares "
                "near the corners.",
                "Slow zoom-in; the corner squares move out of frame.",
            ),
            _w(
                2.5,
                8.0,
                "The target on the wall.",
                "The zoom-in continues; the target ends up filling most of the frame.",
            ),
        ],
        "meta": _meta(_PEBBLECAST_TPS),
        "planted": [
            {
                "unit": "overview",
                "mode": "omission",
                "note": "the steady zoom-in, the only change in the clip, is not mentioned",
            },
        ],
    },
    # --- demo-lamp: static room, yellow lamp lit 0-1, 2-3, 4-5, 6-7, 8-9 s ---
    {
        "clip": "demo-lamp",
        "model": HALCYON,
        "overview": (
            "A fixed camera looks at a grey room with a pale window in the upper left and a "
            "brown table along the bottom. A small yellow lamp on the table blinks slowly, one "
            "second on and one second off, five times in all; nothing else changes."
        ),
        "windows": [
            _w(
                0.0,
                5.0,
                "A small yellow lamp on a brown table is lit from 0 to 1 s, 2 to 3 s and 4 to "
                "5 s, dark in between; a pale window in the upper left of a grey wall.",
                "Static medium shot from a fixed camera.",
            ),
            _w(
                5.0,
                10.0,
                "The lamp lights again from 6 to 7 s and from 8 to 9 s and is dark at the end.",
                "Same static shot.",
            ),
        ],
        "meta": _meta(_HALCYON_TPS),
        "planted": [],
    },
    {
        "clip": "demo-lamp",
        "model": MIRRORFIELD,
        "overview": (
            "In a grey room a yellow warning lamp on a table flashes slowly on and off, "
            "signalling that something in the room has overheated."
        ),
        "windows": [
            _w(
                0.0,
                5.0,
                "The lamp on the table flickers rapidly, several times a second.",
                "Static medium shot.",
            ),
            _w(
                5.0,
                10.0,
                "The lamp lights from 6 to 7 s and from 8 to 9 s; the room is otherwise still.",
                "Static medium shot.",
            ),
        ],
        "meta": _meta(_MIRRORFIELD_TPS, retried=True),
        "planted": [
            {
                "unit": "overview",
                "mode": "inference",
                "note": "'warning' and 'something has overheated' are not supported by the footage",
            },
            {
                "unit": "window",
                "index": 0,
                "mode": "temporal",
                "note": "the lamp is lit 1 s and dark 1 s, not flickering several times a second",
            },
        ],
    },
    {
        "clip": "demo-lamp",
        "model": PEBBLECAST,
        "overview": (
            "A static view of a grey room with a pale window and a brown table; the small yellow "
            "lamp on the table blinks twice and then stays dark."
        ),
        "windows": [
            _w(0.0, 5.0, "The yellow lamp on the table blinks on and off.", "Static shot."),
            _w(5.0, 10.0, "The lamp stays dark; nothing in the room changes.", "Static shot."),
        ],
        "meta": _meta(_PEBBLECAST_TPS),
        "planted": [
            {
                "unit": "overview",
                "mode": "temporal",
                "note": "the lamp blinks five times, until 9 s, not twice",
            },
            {
                "unit": "window",
                "index": 1,
                "mode": "temporal",
                "note": "the lamp is lit again from 6 to 7 s and from 8 to 9 s",
            },
        ],
    },
    # --- demo-count: five blue squares appear one per second from 1 s, left to right ---
    {
        "clip": "demo-count",
        "model": HALCYON,
        "overview": (
            "On a white background, blue squares appear one by one from left to right until a "
            "row of four is complete; the row then stays still. The camera does not move."
        ),
        "windows": [
            _w(
                0.0,
                3.0,
                "A blank white frame; at 1 s a blue square appears on the left, at 2 s a second "
                "one appears to its right.",
                "Static close shot.",
            ),
            _w(
                3.0,
                7.0,
                "Two more squares appear, at 3 and 4 s, completing the row.",
                "Static close shot.",
            ),
        ],
        "meta": _meta(_HALCYON_TPS),
        "planted": [
            {"unit": "overview", "mode": "factual", "note": "five squares, not four"},
            {
                "unit": "window",
                "index": 1,
                "mode": "factual",
                "note": "three more squares appear (at 3, 4 and 5 s), not two",
            },
        ],
    },
    {
        "clip": "demo-count",
        "model": MIRRORFIELD,
        "overview": (
            "Five blue squares appear one at a time, one per second from 1 s, in a row across a "
            "white frame, and remain until the end. The camera is static."
        ),
        "windows": [
            # Rendering-safety probe: this window's scene and shot text carry HTML/script
            # payloads presented as on-screen text. The UI must show them as literal characters;
            # a test that finds them executed or parsed as markup has found an XSS hole.
            _w(
                0.0,
                3.0,
                'A caption strip at the top of the frame reads "<script>alert(1)</script>" as '
                "the first blue squares appear at 1 s and 2 s.",
                "Static close shot; a lower-third graphic shows <img src=x onerror=alert(1)>.",
            ),
            _w(
                3.0,
                7.0,
                "Three more squares appear at 3, 4 and 5 s, completing a row of five.",
                "Static close shot.",
            ),
        ],
        "meta": _meta(_MIRRORFIELD_TPS),
        "planted": [
            {
                "unit": "window",
                "index": 0,
                "mode": "factual",
                "note": "there is no caption strip or graphic; the clip shows no text at all",
            },
        ],
    },
    {
        "clip": "demo-count",
        "model": PEBBLECAST,
        "overview": (
            "A row of five blue squares appears all at once on a white background about one "
            "second in and stays until the end. The shot is static."
        ),
        "windows": [
            _w(
                0.0,
                3.0,
                "A white frame; a blue square appears at 1 s and a second one at 2 s.",
                "Static close shot.",
            ),
            _w(
                3.0,
                7.0,
                "Three more blue squares appear at 3, 4 and 5 s; the row of five stays to the end.",
                "Static close shot.",
            ),
        ],
        "meta": _meta(_PEBBLECAST_TPS),
        "planted": [
            {
                "unit": "overview",
                "mode": "temporal",
                "note": "the squares appear one per second from 1 s to 5 s, not all at once",
            },
        ],
    },
]

# ---------------------------------------------------------------------------------------------
# Expert reference descriptions, one per clip

DEMO_REFERENCES: list[DemoReference] = [
    {
        "clip": "demo-shapes",
        "source": "demo-expert",
        "language": "en",
        "text": (
            "Static wide shot of a dark navy background with a light grey strip along the "
            "bottom. From 0 to 4 s a red square slides from the left edge to the right edge "
            "across the upper part of the frame, then stays parked at the right edge. At 4 s a "
            "teal bar appears at the right of the lower part and slides left, reaching the left "
            "edge at 8 s. No cuts, no camera movement."
        ),
    },
    {
        "clip": "demo-pan",
        "source": "demo-expert",
        "language": "en",
        "text": (
            "A steady left-to-right camera pan across a static landscape: blue sky above green "
            "wavy hills. A tall red pillar near the centre at the start drifts left and leaves "
            "the frame at about 2.6 s; a yellow square enters from the right at about 2 s, "
            "crosses the frame and leaves at about 7.7 s; a dark blue block enters from the "
            "right at about 6.8 s and ends near the centre. Nothing in the scene itself moves."
        ),
    },
    {
        "clip": "demo-cut",
        "source": "demo-expert",
        "language": "en",
        "text": (
            "Two static shots joined by a hard cut at 5.4 s. Shot 1 (0-5.4 s): a green field, a "
            "yellow square moving slowly from the left side to just right of centre. Shot 2 "
            "(5.4-9 s): a dark slate background, a magenta square falling from the top edge to "
            "the bottom edge."
        ),
    },
    {
        "clip": "demo-zoom",
        "source": "demo-expert",
        "language": "en",
        "text": (
            "A still scene: a cream wall with a target of nested squares (blue outside, white, "
            "red centre) and four small black squares near the corners. The camera zooms in "
            "steadily for the whole clip; the corner squares leave the frame by about 2.5 s and "
            "at the end the target fills most of the frame height. Nothing in the scene moves."
        ),
    },
    {
        "clip": "demo-lamp",
        "source": "demo-expert",
        "language": "en",
        "text": (
            "Static medium shot of a grey room: a pale window in the upper left, a brown table "
            "along the bottom, a small yellow lamp on the table. The lamp is lit for one second "
            "and dark for one second, lit at 0-1, 2-3, 4-5, 6-7 and 8-9 s, five times in all. "
            "Nothing else changes."
        ),
    },
    {
        "clip": "demo-count",
        "source": "demo-expert",
        "language": "en",
        "text": (
            "Static close shot of a white background. Blue squares appear one at a time in a "
            "row from left to right, one per second: the first at 1 s, then at 2, 3, 4 and 5 s, "
            "making five squares that stay until the end at 7 s. Nothing moves."
        ),
    },
]
