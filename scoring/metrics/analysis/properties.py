"""What predicts difficulty: clip properties (Tables 11, 12) and difficult-footage penalties (13).

Captions are *correct* when their final overview is accepted as written. Property labels that
are missing, empty or 'unclear' are left out, and so are buckets with fewer than
``min_verdicts`` captions (pooled across models).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from scoring.metrics.analysis.common import clip_codes, codes, models_for
from scoring.metrics.analysis.samples import POINTS, blank_on_few_clips, clip_weights, excludes_zero
from scoring.metrics.analysis.stats import (
    ALPHA,
    bonferroni,
    clip_sums,
    percentile_interval,
    rng_for,
)
from scoring.metrics.analysis.tidy import PROPERTIES, known_label

MIN_VERDICTS = 60

#: Difficult-footage contrasts: name -> (property, difficult buckets, easy buckets).
CONTRASTS: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "handheld": ("camera_platform", ("handheld",), ("tripod_static",)),
    "complexity": ("scene_complexity", ("medium", "high"), ("low",)),
}


def _labels(captions: pd.DataFrame, prop: str) -> pd.Series:
    """Return the normalised labels of ``prop`` (stripped, lower case), NA where unknown."""
    text = captions[prop].astype("string").str.strip().str.lower()
    return text.where(known_label(captions[prop]))


def _eligible(captions: pd.DataFrame, prop: str, min_verdicts: int) -> pd.Series:
    """Return each caption's bucket of ``prop`` where the bucket is eligible, else NA."""
    labels = _labels(captions, prop)
    sizes = labels.value_counts()
    kept = sizes.index[sizes >= min_verdicts]
    return labels.where(labels.isin(kept))


def clip_property_buckets(
    captions: pd.DataFrame,
    *,
    properties: Sequence[str] = PROPERTIES,
    min_verdicts: int = MIN_VERDICTS,
    models: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Return the correct-overview rate of every eligible bucket of every property (Table 12).

    Columns: property, bucket, correct_pct, verdicts, clips, per_model_min, per_model_max
    (captions per model in the bucket, over ``models``), model_spread_pts (best minus worst
    model's correct-overview rate among models with captions in the bucket). Buckets are
    ordered by correct_pct within each property.
    """
    models = models_for(captions, models)
    correct = captions["overview_final_verdict"].eq("accept")
    parts = []
    for prop in properties:
        bucket = _eligible(captions, prop, min_verdicts)
        frame = pd.DataFrame({"bucket": bucket, "correct": correct, "clip": captions["clip"],
                              "model": captions["model"]}).dropna(subset=["bucket"])
        if frame.empty:
            continue
        grouped = frame.groupby("bucket")
        per_model = frame.groupby(["bucket", "model"])["correct"].agg(["size", "mean"])
        sizes = per_model["size"].unstack().reindex(columns=models).fillna(0)
        rates = per_model["mean"].unstack()
        part = pd.DataFrame({
            "property": prop,
            "correct_pct": 100 * grouped["correct"].mean(),
            "verdicts": grouped.size(),
            "clips": grouped["clip"].nunique(),
            "per_model_min": sizes.min(axis=1).astype(int),
            "per_model_max": sizes.max(axis=1).astype(int),
            "model_spread_pts": 100 * (rates.max(axis=1) - rates.min(axis=1)),
        })
        parts.append(part.rename_axis("bucket").reset_index().sort_values("correct_pct"))
    columns = ["property", "bucket", "correct_pct", "verdicts", "clips", "per_model_min",
               "per_model_max", "model_spread_pts"]
    if not parts:
        return pd.DataFrame(columns=columns)
    return pd.concat(parts, ignore_index=True)[columns]


def _caption_chi_square(bucket: pd.Series, correct: pd.Series) -> tuple[float, int, float]:
    """Return Pearson's chi-square (no continuity correction), d.f. and p of bucket x correct."""
    table = pd.crosstab(bucket, correct).reindex(columns=[False, True], fill_value=0)
    if len(table) < 2 or (table.sum(axis=0) == 0).any():
        return float("nan"), max(len(table) - 1, 0), float("nan")
    result = stats.chi2_contingency(table.to_numpy(), correction=False)
    return float(result.statistic), int(result.dof), float(result.pvalue)


def _clip_kruskal(bucket: pd.Series, correct: pd.Series, clip: pd.Series) -> tuple[float, float]:
    """Return Kruskal-Wallis H and p on per-clip correct shares grouped by bucket."""
    frame = pd.DataFrame({"bucket": bucket, "correct": correct, "clip": clip}).dropna()
    shares = frame.groupby(["bucket", "clip"])["correct"].mean()
    groups = [group.to_numpy() for _, group in shares.groupby(level="bucket")]
    if len(groups) < 2 or np.unique(np.concatenate(groups)).size < 2:
        return float("nan"), float("nan")  # all shares equal: the test is undefined
    result = stats.kruskal(*groups)
    return float(result.statistic), float(result.pvalue)


def clip_property_tests(
    captions: pd.DataFrame,
    *,
    properties: Sequence[str] = PROPERTIES,
    min_verdicts: int = MIN_VERDICTS,
    alpha: float = ALPHA,
    comparisons: int | None = None,
) -> pd.DataFrame:
    """Return, per property, the range of correct-overview rates and its tests (Table 11).

    Caption level: Pearson chi-square of bucket x correct (treats captions as independent and
    overstates the evidence). Clip level: Kruskal-Wallis on per-clip correct shares (all
    models' captions of a clip pooled), the appropriate test. The clip-level p is
    Bonferroni-adjusted over ``comparisons`` (default: the properties that could be tested,
    i.e. with at least two eligible buckets). Columns: property, buckets, verdicts,
    lowest_bucket, lowest_correct_pct, highest_bucket, highest_correct_pct, chi2, dof,
    p_caption, kruskal_h, p_clip, bonferroni_comparisons, p_clip_bonferroni,
    survives_bonferroni.
    """
    correct = captions["overview_final_verdict"].eq("accept")
    rows = []
    for prop in properties:
        bucket = _eligible(captions, prop, min_verdicts)
        rates = correct[bucket.notna()].groupby(bucket[bucket.notna()]).mean().sort_values()
        chi2, dof, p_caption = _caption_chi_square(bucket[bucket.notna()], correct[bucket.notna()])
        h, p_clip = _clip_kruskal(bucket, correct, captions["clip"])
        rows.append({
            "property": prop, "buckets": len(rates), "verdicts": int(bucket.notna().sum()),
            "lowest_bucket": rates.index[0] if len(rates) else "",
            "lowest_correct_pct": 100 * rates.iloc[0] if len(rates) else np.nan,
            "highest_bucket": rates.index[-1] if len(rates) else "",
            "highest_correct_pct": 100 * rates.iloc[-1] if len(rates) else np.nan,
            "chi2": chi2, "dof": dof, "p_caption": p_caption, "kruskal_h": h, "p_clip": p_clip,
        })
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    tested = int(table["p_clip"].notna().sum())
    table["bonferroni_comparisons"] = comparisons or tested
    table["p_clip_bonferroni"] = bonferroni(table["p_clip"].to_numpy(), comparisons or tested)
    table["survives_bonferroni"] = (table["p_clip_bonferroni"] < alpha).to_numpy()
    return table


def difficulty_penalty(
    captions: pd.DataFrame,
    *,
    contrasts: Mapping[str, tuple[str, Sequence[str], Sequence[str]]] = CONTRASTS,
    resamples: int = 20_000,
    seed: int = 0,
    alpha: float = ALPHA,
    models: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Return each model's intervention rate on difficult vs easier footage (Table 13).

    Intervention = final overview rejected. For each contrast ``name``: columns
    ``<name>_difficult_pct``, ``<name>_easy_pct``, ``<name>_penalty_pts`` (difficult minus
    easy, points), its percentile interval from a bootstrap over clips
    (``<name>_ci_low``/``_ci_high``), ``<name>_excludes_zero`` and the caption counts
    ``<name>_difficult_captions`` / ``<name>_easy_captions``. Rows are ordered by the first
    contrast's penalty, largest first.
    """
    models = models_for(captions, models)
    caption_clip, clips = clip_codes(captions)
    by_model = np.eye(len(models))[codes(captions["model"], models)]
    rejected = captions["overview_final_verdict"].eq("reject").to_numpy(float)[:, None]
    weights = clip_weights(len(clips), resamples, rng_for(seed, "difficulty_penalty"))
    table = pd.DataFrame({"model": models})
    for name, (prop, difficult, easy) in contrasts.items():
        labels = _labels(captions, prop)
        sides = []
        for buckets in (difficult, easy):
            inside = labels.isin(list(buckets)).fillna(False).to_numpy(float)[:, None]
            sides.append((clip_sums(caption_clip, by_model * inside * rejected, len(clips)),
                          clip_sums(caption_clip, by_model * inside, len(clips))))
        rates = [_rates(numerator.sum(axis=0), denominator.sum(axis=0))
                 for numerator, denominator in sides]
        resampled = [_rates(weights @ numerator, weights @ denominator)
                     for numerator, denominator in sides]
        low, high = blank_on_few_clips(
            *percentile_interval(100 * (resampled[0] - resampled[1]), alpha),
            sides[0][1], sides[1][1])
        table[f"{name}_difficult_pct"] = 100 * rates[0]
        table[f"{name}_easy_pct"] = 100 * rates[1]
        table[f"{name}_penalty_pts"] = 100 * (rates[0] - rates[1])
        table[f"{name}_ci_low"] = low
        table[f"{name}_ci_high"] = high
        table[f"{name}_excludes_zero"] = excludes_zero(low, high, full_scale=POINTS)
        table[f"{name}_difficult_captions"] = sides[0][1].sum(axis=0).astype(int)
        table[f"{name}_easy_captions"] = sides[1][1].sum(axis=0).astype(int)
    if contrasts:
        first = f"{next(iter(contrasts))}_penalty_pts"
        table = table.sort_values(first, ascending=False, kind="stable", na_position="last")
    return table.reset_index(drop=True)


def _rates(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """Return numerator / denominator elementwise, NaN where the denominator is 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, numerator / np.where(denominator > 0, denominator, 1),
                        np.nan)
