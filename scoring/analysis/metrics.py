"""Do automatic scores recover the human verdict? AUC of each score_* column (Table 1)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
import pandas as pd

from scoring.analysis.common import clip_codes
from scoring.analysis.stats import (
    ALPHA,
    ClipAUC,
    clip_resample_counts,
    percentile_interval,
    rng_for,
)
from scoring.analysis.tidy import score_columns

#: Scores for which a *lower* value should mean "accepted" (shorter overview -> accept).
LOWER_ACCEPTS: tuple[str, ...] = ("score_length",)


def metric_auc(
    captions: pd.DataFrame,
    *,
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
    Intervals: percentile bootstrap over clips. Matched: only pairs of an accepted and a
    rejected caption of the *same* clip (candidates scored against the same reference set),
    with its own clip-bootstrap interval. Columns: score, direction, accepted, rejected,
    mean_accepted, mean_rejected, auc, ci_low, ci_high, matched_clips, auc_matched,
    matched_ci_low, matched_ci_high.
    """
    names = list(scores) if scores is not None else score_columns(captions)
    caption_clip, clips = clip_codes(captions)
    accepted = captions["overview_final_verdict"].eq("accept").to_numpy()
    weights = clip_resample_counts(len(clips), resamples, rng_for(seed, "metric_auc"))
    rows = []
    for name in names:
        values = captions[name].to_numpy(float)
        has = ~np.isnan(values)
        higher = name not in lower_accepts
        auc = ClipAUC(values, accepted, caption_clip, len(clips), higher_accepts=higher)
        pooled, matched = auc.resampled(weights)
        low, high = percentile_interval(pooled, alpha)
        matched_low, matched_high = percentile_interval(matched, alpha)
        rows.append({
            "score": name,
            "direction": "higher accepts" if higher else "lower accepts",
            "accepted": int((has & accepted).sum()),
            "rejected": int((has & ~accepted).sum()),
            "mean_accepted": _mean(values[has & accepted]),
            "mean_rejected": _mean(values[has & ~accepted]),
            "auc": auc.auc(), "ci_low": float(low), "ci_high": float(high),
            "matched_clips": auc.matched_clips(), "auc_matched": auc.matched_auc(),
            "matched_ci_low": float(matched_low), "matched_ci_high": float(matched_high),
        })
    columns = ["score", "direction", "accepted", "rejected", "mean_accepted", "mean_rejected",
               "auc", "ci_low", "ci_high", "matched_clips", "auc_matched", "matched_ci_low",
               "matched_ci_high"]
    return pd.DataFrame(rows, columns=columns)


def _mean(values: np.ndarray) -> float:
    """Return the mean, NaN for no values (without numpy's empty-slice warning)."""
    return float(values.mean()) if len(values) else float("nan")
