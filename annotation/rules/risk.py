"""How much a QC reviewer should look at a submitted annotation first. Pure, no Django.

An item's risk adds up signals a reviewer would want to check before anything else:
- a large overview edit (words changed, scaled by the study's largest threshold), up to 2;
- a near-total overview repair, 1; each near-total window repair, 0.5;
- a fast accept: the overview accepted after less than FAST_ACCEPT_SECONDS of active time
  with less than LITTLE_WATCHED_SHARE of the clip watched, 1.5;
- disagreement with another annotator of the same caption (overview verdicts differ), 1.

The workflow stores the result on the annotation when it is submitted (and again on the
other annotations of the caption when a second annotator's verdict arrives), so the review
queue is read in the order of an index instead of being recomputed for every page.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from scoring.metrics import edits

FAST_ACCEPT_SECONDS = 20.0
LITTLE_WATCHED_SHARE = 0.5


@dataclass(frozen=True)
class WindowJudgement:
    verdict: str  # "accept", "reject" or "" (undecided)
    original: str  # the model's scene and shot
    corrected: str  # the annotator's scene and shot


def watched_share(telemetry: Any) -> float:
    """The share of the clip the annotator watched, from 0 to 1; 0 when it is missing or
    unreadable (telemetry written before saves were validated must not stop the queue)."""
    value = telemetry.get("watched_share") if isinstance(telemetry, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    try:
        share = float(value)
    except OverflowError:
        return 0.0
    return min(max(share, 0.0), 1.0) if math.isfinite(share) else 0.0


def review_risk(
    *,
    original_overview: str,
    overview_verdict: str,
    overview_text: str,
    windows: Iterable[WindowJudgement],
    active_seconds: float,
    telemetry: Any,
    disagreement: bool,
    scale: int,
    sizing: edits.EditSizing,
) -> tuple[float, list[str]]:
    """The risk score (rounded to 3 places) and its reasons in words, in the order above; edit
    sizes measured with the study's ``sizing`` (its language and near-total cut)."""
    reasons: list[str] = []
    risk = 0.0
    if overview_verdict == "reject":
        size = sizing.measure(original_overview, overview_text)
        risk += min(size.words_changed / scale, 2.0)
        if size.words_changed >= scale:
            reasons.append(f"large overview edit ({size.words_changed} words)")
        if size.near_total:
            risk += 1.0
            reasons.append("near-total overview repair")
    near_total_windows = sum(
        1
        for w in windows
        if w.verdict == "reject"
        and edits.near_total(edits.char_similarity(w.original, w.corrected), sizing.near_total_cut)
    )
    if near_total_windows:
        risk += 0.5 * near_total_windows
        reasons.append(f"{near_total_windows} near-total window repair(s)")
    watched = watched_share(telemetry)
    if (
        overview_verdict == "accept"
        and active_seconds < FAST_ACCEPT_SECONDS
        and watched < LITTLE_WATCHED_SHARE
    ):
        risk += 1.5
        reasons.append(f"fast accept ({active_seconds:.0f} s, {watched:.0%} watched)")
    if disagreement:
        risk += 1.0
        reasons.append("annotators disagree on the overview")
    return round(risk, 3), reasons
