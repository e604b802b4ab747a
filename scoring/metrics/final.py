"""A caption's final version, derived in one place from its passes.

Pure: plain data in (the caption as the model wrote it, and a pass as
:func:`annotation.services.annotation_common.pass_snapshot` writes it, which is also the shape of
a pass in a study bundle and in the API), a :class:`~scoring.metrics.exports.CorrectedCaption`
out. Every consumer of final texts reads them from :func:`final_caption`: the data release
(Parquet and JSON Lines), the profile's tidy tables, the corrected JSON Lines and WebVTT
exports, the scoring items, views built from a bundle and the API. Its edit sizes are measured
with the study's :class:`~scoring.metrics.edits.EditSizing` (its caption language).

**The rules.** The final pass is the QC pass where the reviewer amended, else the annotator's.
A unit the pass rejected takes the pass's correction; an accepted (or unjudged) unit keeps the
model's text and times. Failure modes belong to rejected units only. Where the segmentation was
rejected, the corrected timeline is the pass's own windows; otherwise it is the model's windows
as judged (see :mod:`scoring.metrics.exports`).

**An amendment reaches the timeline.** A reviewer's pass starts as a copy of the annotator's,
corrected timeline included. When the reviewer re-words a window and leaves the segmentation as
it was, :func:`carry_window_amendments` gives the timeline's windows that carried the annotator's
text for that window the reviewer's text, so that the release's window rows and its timeline
say the same thing. A timeline window that the annotator had merged or re-worded on its own
matches no window and is left as the annotator wrote it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scoring.metrics.edits import EditSizing
from scoring.metrics.exports import REJECT, CorrectedCaption, CorrectedWindow, Cue

ACCEPT = "accept"


def verdict_of(value: Any) -> str:
    """A stored verdict as final: reject, else accept (approved passes have no undecided unit)."""
    return REJECT if value == REJECT else ACCEPT


def effective_window(original: Mapping[str, Any], row: Mapping[str, Any] | None) -> dict[str, Any]:
    """What a pass says one of the model's windows shows: its correction where the pass rejected
    it, else the model's own start, end, scene and shot."""
    source = row if row is not None and row.get("verdict") == REJECT else original
    return {"start": float(source["start"]), "end": float(source["end"]),
            "scene": str(source["scene"]), "shot": str(source["shot"])}


def final_kind(passes: Mapping[str, Any]) -> str:
    """Which pass of an approved annotation is final, given its passes by kind (``annotator``,
    ``qc``; a missing or empty QC pass means the reviewer approved): ``qc`` or ``annotator``."""
    return "qc" if passes.get("qc") else "annotator"


def final_caption(
    *,
    clip: str,
    model: str,
    original_overview: str,
    original_windows: Sequence[Mapping[str, Any]],
    final: Mapping[str, Any],
    final_kind: str,
    sizing: EditSizing,
    annotator: str = "",
    reviewer: str = "",
) -> CorrectedCaption:
    """Return the caption as its final pass leaves it (see the module docstring).

    ``original_windows`` are the model's windows (``index, start, end, scene, shot``); ``final``
    is the final pass as plain data (``overview``, ``windows``, ``segmentation``); ``final_kind``
    is ``qc`` or ``annotator``.
    """
    overview = final.get("overview") or {}
    overview_verdict = verdict_of(overview.get("verdict"))
    rows = {int(row["index"]): row for row in final.get("windows") or []}
    windows = []
    for original in sorted(original_windows, key=lambda w: int(w["index"])):
        index = int(original["index"])
        row = rows.get(index)
        verdict = verdict_of(row.get("verdict") if row else "")
        shown = effective_window(original, row)
        windows.append(CorrectedWindow(
            index=index, start=shown["start"], end=shown["end"], scene=shown["scene"],
            shot=shown["shot"], verdict=verdict,
            modes=tuple(row.get("modes") or ()) if row is not None and verdict == REJECT else (),
            original_scene=str(original["scene"]), original_shot=str(original["shot"]),
            original_start=float(original["start"]), original_end=float(original["end"]),
        ))
    segmentation = final.get("segmentation") or {}
    segmentation_verdict = verdict_of(segmentation.get("verdict"))
    timeline = tuple(
        Cue(float(w["start"]), float(w["end"]), str(w.get("scene", "")), str(w.get("shot", "")))
        for w in (segmentation.get("windows") or [] if segmentation_verdict == REJECT else [])
    )
    return CorrectedCaption(
        clip=clip,
        model=model,
        overview=str(overview.get("text", "")) if overview_verdict == REJECT else original_overview,
        overview_verdict=overview_verdict,
        original_overview=original_overview,
        windows=tuple(windows),
        segmentation_verdict=segmentation_verdict,
        overview_modes=tuple(overview.get("modes") or ()) if overview_verdict == REJECT else (),
        segmentation_modes=(tuple(segmentation.get("modes") or ())
                            if segmentation_verdict == REJECT else ()),
        corrected_windows=timeline,
        annotator=annotator,
        reviewer=reviewer,
        final_pass=final_kind,
        sizing=sizing,
    )


def carry_window_amendments(
    timeline: Sequence[Mapping[str, Any]],
    original_windows: Sequence[Mapping[str, Any]],
    before: Sequence[Mapping[str, Any]],
    after: Sequence[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """Return ``timeline`` (a rejected segmentation's windows) with each window the reviewer
    re-worded carried into it (see the module docstring).

    ``before`` and ``after`` are the window rows of the annotator's pass and of the reviewer's
    (``index, verdict, start, end, scene, shot``). A timeline window takes the reviewer's scene
    and shot when its scene and shot are the annotator's for a window whose text the reviewer
    changed, and its span overlaps that window's span in the annotator's pass; its own start and
    end are kept (they are the segmentation's).
    """
    mine = {int(row["index"]): row for row in before}
    theirs = {int(row["index"]): row for row in after}
    changes = []
    for original in original_windows:
        index = int(original["index"])
        old = effective_window(original, mine.get(index))
        new = effective_window(original, theirs.get(index))
        if (old["scene"], old["shot"]) != (new["scene"], new["shot"]):
            changes.append((old, new))
    carried = []
    for cue in timeline:
        cue = dict(cue)
        for old, new in changes:
            same_text = (cue.get("scene", ""), cue.get("shot", "")) == (old["scene"], old["shot"])
            overlaps = float(cue["start"]) < old["end"] and old["start"] < float(cue["end"])
            if same_text and overlaps:
                cue["scene"], cue["shot"] = new["scene"], new["shot"]
                break
        carried.append(cue)
    return carried
