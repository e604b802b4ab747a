"""Do automatic scores recover the human verdict? AUC of each score_* column (Table 1).

Each score column names the reference set it was computed against (the paper's Table 1 rows):

- ``score_approved_*``: the approved final overviews of the clip's *other* captions;
- ``score_gold_*``: the reviewer corrections of the clip's other captions;
- ``score_imported_*``: the clip's imported references (an extra row, when a study has them);
- ``score_length``: a control without references (shorter overview -> accept);
- ``score_external_*``: a score imported from elsewhere that read no references (a Video-LLM
  judge's defect count...): a control, oriented by its stated direction (``lower_accepts``);
- any other ``score_*``: a score whose reference set the caller did not state.

The Matched column compares an accepted and a rejected caption of the same clip scored against
one identical reference set. For approved and gold references each caption's own set differs
(it leaves the caption itself out), so matched pairs come from a separate ``matched`` table of
leave-both-out scores (columns clip, score, accepted_model, rejected_model, accepted_value,
rejected_value); without it the matched AUC of those rows is not computable (NaN). For the
other rows every caption of a clip already has the same reference set, so the matched AUC is
the same-clip pairs of the pooled scores.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
import pandas as pd

from scoring.metrics.analysis.common import clip_codes
from scoring.metrics.analysis.samples import MIN_CLIPS, clip_weights
from scoring.metrics.analysis.stats import (
    ALPHA,
    ClipAUC,
    clip_sums,
    percentile_interval,
    ratio_resamples,
    rng_for,
)
from scoring.metrics.analysis.tidy import score_columns

#: Scores for which a *lower* value should mean "accepted" (shorter overview -> accept).
LOWER_ACCEPTS: tuple[str, ...] = ("score_length",)
#: Reference sets in table order; the first whose prefix a column has names its row.
REFERENCE_SETS: tuple[tuple[str, str], ...] = (
    ("approved", "score_approved_"),
    ("gold", "score_gold_"),
    ("imported", "score_imported_"),
)
#: Reference sets whose captions each have their own set, so Matched needs leave-both-out scores.
LEAVE_OUT_SETS = frozenset({"approved", "gold"})
SET_ORDER = ("approved", "gold", "imported", "unstated", "control")
MATCHED_COLUMNS = ("clip", "score", "accepted_model", "rejected_model", "accepted_value",
                   "rejected_value")
COLUMNS = ["reference_set", "score", "direction", "accepted", "rejected", "mean_accepted",
           "mean_rejected", "auc", "ci_low", "ci_high", "matched_pairs", "matched_clips",
           "auc_matched", "matched_ci_low", "matched_ci_high"]


#: Imported scores that read no references (scoring.external_scores): control rows.
CONTROL_PREFIX = "score_external_"


def reference_set(column: str) -> str:
    """Return the reference set a score column was computed against (see the module doc)."""
    if column in LOWER_ACCEPTS or column.startswith(CONTROL_PREFIX):
        return "control"
    for name, prefix in REFERENCE_SETS:
        if column.startswith(prefix):
            return name
    return "unstated"


def metric_auc(
    captions: pd.DataFrame,
    *,
    matched: pd.DataFrame | None = None,
    scores: Sequence[str] | None = None,
    lower_accepts: Collection[str] = LOWER_ACCEPTS,
    resamples: int = 20_000,
    seed: int = 0,
    alpha: float = ALPHA,
) -> pd.DataFrame:
    """Return, per score column, how well it separates accepted from rejected overviews.

    AUC is the probability that an accepted caption's score beats a rejected one's (ties half),
    oriented in advance (higher accepts, except ``lower_accepts``), so AUC < 0.5 means the score
    points the wrong way. Captions with a missing score are left out of that score's row.
    Intervals: percentile bootstrap over clips (the same resamples for every row). Matched: the
    share of same-clip accepted-rejected pairs, scored against an identical reference set, in
    which the accepted caption wins (ties half), with its own clip-bootstrap interval; for
    approved and gold rows the pairs come from ``matched`` (see the module docstring).
    Rows are ordered by reference set (approved, gold, imported, unstated, control), then as
    the columns. Columns: :data:`COLUMNS`.
    """
    names = list(scores) if scores is not None else score_columns(captions)
    names = sorted(names, key=lambda name: (SET_ORDER.index(reference_set(name)),
                                            names.index(name)))
    caption_clip, clips = clip_codes(captions)
    accepted = captions["overview_final_verdict"].eq("accept").to_numpy()
    weights = clip_weights(len(clips), resamples, rng_for(seed, "metric_auc"))
    pairs = matched if matched is not None else pd.DataFrame(columns=list(MATCHED_COLUMNS))
    rows = []
    for name in names:
        values = captions[name].to_numpy(float)
        has = ~np.isnan(values)
        higher = name not in lower_accepts
        auc = ClipAUC(values, accepted, caption_clip, len(clips), higher_accepts=higher)
        pooled, same_clip = auc.resampled(weights)
        low, high = percentile_interval(pooled, alpha)
        if len(np.unique(caption_clip[has])) < MIN_CLIPS:  # samples: one clip of its own
            low = high = np.asarray(np.nan)
        kind = reference_set(name)
        if kind in LEAVE_OUT_SETS:
            matched_row = _leave_out_matched(pairs[pairs["score"] == name], clips, weights,
                                             higher, alpha)
        else:
            matched_low, matched_high = percentile_interval(same_clip, alpha)
            if auc.matched_clips() < MIN_CLIPS:
                matched_low = matched_high = np.asarray(np.nan)
            matched_row = {
                "matched_pairs": int(auc.n_accepted @ auc.n_rejected),
                "matched_clips": auc.matched_clips(), "auc_matched": auc.matched_auc(),
                "matched_ci_low": float(matched_low), "matched_ci_high": float(matched_high)}
        rows.append({
            "reference_set": kind,
            "score": name,
            "direction": "higher accepts" if higher else "lower accepts",
            "accepted": int((has & accepted).sum()),
            "rejected": int((has & ~accepted).sum()),
            "mean_accepted": _mean(values[has & accepted]),
            "mean_rejected": _mean(values[has & ~accepted]),
            "auc": auc.auc(), "ci_low": float(low), "ci_high": float(high),
            **matched_row,
        })
    return pd.DataFrame(rows, columns=COLUMNS)


def _leave_out_matched(pairs: pd.DataFrame, clips: pd.Index, weights: np.ndarray, higher: bool,
                       alpha: float) -> dict[str, float | int]:
    """Return the Matched cells from leave-both-out pair scores (NaN when there are none)."""
    good = pairs["accepted_value"].to_numpy(float)
    bad = pairs["rejected_value"].to_numpy(float)
    codes = clips.get_indexer(pairs["clip"])
    keep = ~np.isnan(good) & ~np.isnan(bad) & (codes >= 0)
    good, bad, codes = good[keep], bad[keep], codes[keep]
    if not higher:
        good, bad = -good, -bad
    wins = (good > bad) + 0.5 * (good == bad)
    if not len(wins):
        nan = float("nan")
        return {"matched_pairs": 0, "matched_clips": 0, "auc_matched": nan,
                "matched_ci_low": nan, "matched_ci_high": nan}
    per_clip = clip_sums(codes, np.column_stack([wins, np.ones_like(wins)]), len(clips))
    resampled = ratio_resamples(weights, per_clip[:, :1], per_clip[:, 1:])[:, 0]
    low, high = percentile_interval(resampled, alpha)
    if len(np.unique(codes)) < MIN_CLIPS:
        low = high = np.asarray(np.nan)
    return {"matched_pairs": int(len(wins)), "matched_clips": int(len(np.unique(codes))),
            "auc_matched": float(wins.mean()), "matched_ci_low": float(low),
            "matched_ci_high": float(high)}


def _mean(values: np.ndarray) -> float:
    """Return the mean, NaN for no values (without numpy's empty-slice warning)."""
    return float(values.mean()) if len(values) else float("nan")
