"""Corrected captions as files: JSON Lines (one caption a line) and WebVTT (the timeline as cues).

Pure: plain dataclasses in, text out; nothing here imports Django. Every
:class:`CorrectedCaption` is made by :func:`scoring.metrics.final.final_caption` (the Django side,
:func:`scoring.profiles.corrected_captions`, feeds it the final verdicts).

**The corrected timeline** of a caption is what the final verdict says the video shows, window
by window: where the segmentation was rejected, the corrected windows of the segmentation (they
replace the model's boundaries, and may merge or split its windows); otherwise the model's
windows, each with its final times and its final scene and shot text (a rejected window's
correction, an accepted window's original).

**WebVTT** (W3C WebVTT, https://www.w3.org/TR/webvtt1/): one file per caption, since the cue
times of a file are times in one video. A cue is one window of the corrected timeline; its text
is the scene on the first line and the shot on the second. In cue text ``&``, ``<`` and ``>``
become ``&amp;``, ``&lt;`` and ``&gt;`` (so no cue text can hold ``-->`` either), and a line
break inside a field becomes a space (a blank line would end the cue).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from scoring.metrics.edits import EditSize, EditSizing

REJECT = "reject"
_WHITESPACE = re.compile(r"\s+")
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class Cue:
    """One window of a corrected timeline: a span of the clip and what it shows."""

    start: float
    end: float
    scene: str
    shot: str


@dataclass(frozen=True)
class CorrectedWindow:
    """One of the model's windows as the final verdict left it."""

    index: int
    start: float
    end: float
    scene: str
    shot: str
    verdict: str
    modes: tuple[str, ...] = ()
    original_scene: str = ""
    original_shot: str = ""
    original_start: float = 0.0
    original_end: float = 0.0


@dataclass(frozen=True)
class CorrectedCaption:
    """A caption's final verdict: the corrected overview, windows and segmentation."""

    clip: str
    model: str
    overview: str
    overview_verdict: str
    original_overview: str
    windows: tuple[CorrectedWindow, ...]
    segmentation_verdict: str
    overview_modes: tuple[str, ...] = ()
    segmentation_modes: tuple[str, ...] = ()
    #: The corrected boundaries of a rejected segmentation (empty when it was accepted).
    corrected_windows: tuple[Cue, ...] = ()
    annotator: str = ""
    reviewer: str = ""
    #: 'qc' when the reviewer amended the annotator's pass, else 'annotator'.
    final_pass: str = "annotator"
    #: The study's edit-size settings (its caption language): every size below is measured so.
    sizing: EditSizing | None = None

    def _measure(self, original: str, corrected: str) -> EditSize:
        if self.sizing is None:
            raise ValueError("This caption was built without its study's edit-size settings.")
        return self.sizing.measure(original, corrected)

    def overview_size(self) -> EditSize:
        """The edit size of the final overview against the model's."""
        return self._measure(self.original_overview, self.overview)

    def window_size(self, window: CorrectedWindow) -> EditSize:
        """The edit size of a window's scene and shot together against the model's."""
        return self._measure(f"{window.original_scene} {window.original_shot}",
                             f"{window.scene} {window.shot}")

    def field_size(self, window: CorrectedWindow, field: str) -> EditSize:
        """The edit size of one of a window's texts (``scene`` or ``shot``) against the model's."""
        return self._measure(getattr(window, f"original_{field}"), getattr(window, field))

    def timeline(self) -> list[Cue]:
        """Return the corrected timeline (see the module docstring)."""
        if self.segmentation_verdict == REJECT and self.corrected_windows:
            return list(self.corrected_windows)
        return [Cue(w.start, w.end, w.scene, w.shot) for w in self.windows]


# --------------------------------------------------------------------------- JSON Lines


def caption_record(caption: CorrectedCaption) -> dict[str, Any]:
    """Return one caption as the plain record of a JSON Lines export (with its edit sizes, the
    overview's and each window's scene and shot together, when it has its study's settings)."""
    record: dict[str, Any] = {
        "clip": caption.clip,
        "model": caption.model,
        "overview": caption.overview,
        "overview_verdict": caption.overview_verdict,
        "overview_modes": list(caption.overview_modes),
        "segmentation_verdict": caption.segmentation_verdict,
        "segmentation_modes": list(caption.segmentation_modes),
        "timeline": [
            {"start": cue.start, "end": cue.end, "scene": cue.scene, "shot": cue.shot}
            for cue in caption.timeline()
        ],
        "windows": [
            {
                "index": w.index, "start": w.start, "end": w.end, "scene": w.scene,
                "shot": w.shot, "verdict": w.verdict, "modes": list(w.modes),
                "original_scene": w.original_scene, "original_shot": w.original_shot,
            }
            for w in caption.windows
        ],
        "original_overview": caption.original_overview,
        "annotator": caption.annotator,
        "reviewer": caption.reviewer,
        "final_pass": caption.final_pass,
    }
    if caption.sizing is not None:
        record["overview_size"] = size_record(caption.overview_size())
        for row, window in zip(record["windows"], caption.windows, strict=True):
            row["size"] = size_record(caption.window_size(window))
    return record


def size_record(size: EditSize) -> dict[str, Any]:
    """An edit size as a record holds it: words changed, character similarity (6 places), near-total."""
    return {"words_changed": size.words_changed, "char_similarity": round(size.char_similarity, 6),
            "near_total": size.near_total}


def jsonl(captions: Iterable[CorrectedCaption]) -> str:
    """Return the captions as JSON Lines: one record (:func:`caption_record`) per line."""
    return "".join(json.dumps(caption_record(c), ensure_ascii=False) + "\n" for c in captions)


# --------------------------------------------------------------------------- WebVTT


def vtt_timestamp(seconds: float) -> str:
    """Return ``seconds`` as a WebVTT timestamp ``hh:mm:ss.ttt`` (rounded to the millisecond)."""
    if seconds < 0:
        raise ValueError(f"a cue time cannot be negative: {seconds}")
    millis = round(seconds * 1000)
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs, millis = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}.{millis:03d}"


def vtt_escape(text: str) -> str:
    """Return ``text`` as one line of WebVTT cue text: entities for ``& < >``, one line."""
    line = _WHITESPACE.sub(" ", text).strip()
    return line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _note_line(text: str) -> str:
    """Return ``text`` safe inside a NOTE block (one line, no ``-->``)."""
    return _WHITESPACE.sub(" ", text).strip().replace("-->", "- ->")


def webvtt(caption: CorrectedCaption) -> str:
    """Return the corrected timeline of one caption as a WebVTT file.

    Cues are numbered from 1 in timeline order; a cue whose times round to the same millisecond
    is given one millisecond, since a cue must end after it starts.
    """
    parts = [
        "WEBVTT",
        "",
        "NOTE",
        _note_line(f"Corrected timeline of clip {caption.clip} by model {caption.model}"),
        _note_line(f"Segmentation {caption.segmentation_verdict or 'not judged'}; "
                   f"final pass: {caption.final_pass}"),
        "",
    ]
    for number, cue in enumerate(caption.timeline(), start=1):
        start = vtt_timestamp(cue.start)
        end = vtt_timestamp(cue.end)
        if end <= start:
            end = vtt_timestamp(round(cue.start * 1000) / 1000 + 0.001)
        parts.append(str(number))
        parts.append(f"{start} --> {end}")
        parts += [line for line in (vtt_escape(cue.scene), vtt_escape(cue.shot)) if line]
        parts.append("")
    return "\n".join(parts)


def safe_file_name(name: str) -> str:
    """Return ``name`` reduced to letters, digits, ``.``, ``_`` and ``-`` (never empty)."""
    cleaned = _UNSAFE_NAME.sub("_", name).strip("._")
    return cleaned or "caption"


def webvtt_files(captions: Sequence[CorrectedCaption]) -> dict[str, str]:
    """Return ``{file name: WebVTT text}``, one file per caption named after its clip.

    Names are made safe with :func:`safe_file_name`; two clips that reduce to the same name are
    told apart by a numeric suffix.
    """
    files: dict[str, str] = {}
    for caption in captions:
        stem = safe_file_name(caption.clip)
        name, n = f"{stem}.vtt", 1
        while name in files:
            n += 1
            name = f"{stem}-{n}.vtt"
        files[name] = webvtt(caption)
    return files
