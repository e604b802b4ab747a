"""Pairwise gaps in intervention rate between models on the paired subset (Table 15).

Raw: the difference of two models' intervention rates over the same clips, with a paired
bootstrap over clips (both models' captions of a drawn clip move together).

Adjusted: an additive (linear probability) model on the paired subset,
``rejected = model effect + rater effects + clip effect + error``, fitted by least squares and
refitted in each clip-bootstrap resample; the gap is the difference of two model effects.

Why the adjusted fit is cheap: every caption of a clip gets the same bootstrap weight (the
number of times its clip was drawn), so removing the clip effects by demeaning within clips
(Frisch-Waugh-Lovell) is the same in every resample. Each resample's normal equations are then
a weighted sum of fixed per-clip Gram matrices, ``A_b = sum_c w_bc Z_c'Z_c``: one matrix
product for all resamples, then one batched pseudo-inverse. A clip drawn twice counts twice,
which gives the same model effects as giving each copy its own clip effect.

Intervals are percentile intervals at the Bonferroni level ``alpha / pairs``; a pair
*separates* when its interval excludes zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np
import pandas as pd

from scoring.metrics.analysis.common import codes, models_for
from scoring.metrics.analysis.samples import (
    MIN_CLIPS,
    POINTS,
    clip_weights,
    estimable,
    excludes_zero,
    snap_to_zero,
)
from scoring.metrics.analysis.stats import (
    ALPHA,
    clip_sums,
    percentile_interval,
    rng_for,
)
from scoring.metrics.analysis.tidy import paired_subset

RATERS: tuple[str, ...] = ("annotator",)
#: The table's columns, also those of the table written when it cannot be computed.
GAP_COLUMNS: tuple[str, ...] = (
    "model_a", "model_b", "clips", "rate_a_pct", "rate_b_pct", "gap_pts", "ci_low", "ci_high",
    "separates", "adjusted_gap_pts", "adjusted_ci_low", "adjusted_ci_high", "adjusted_separates",
    "adjusted_note", "comparisons")
# Relative cut below which a direction of the normal equations counts as unidentified (e.g. an
# annotator who saw only clips left out of a resample, or who always annotates whole clips).
_RTOL = 1e-10


def _outcome_matrix(paired: pd.DataFrame, models: list[str]) -> tuple[np.ndarray, pd.Index]:
    """Return (clips x models) final-overview rejections of the paired subset, and the clips."""
    table = (paired.assign(rejected=paired["overview_final_verdict"].eq("reject"))
             .pivot(index="clip", columns="model", values="rejected")
             .reindex(columns=models))
    return table.to_numpy(float), table.index


def _design(paired: pd.DataFrame, models: list[str], raters: Sequence[str]) -> np.ndarray:
    """Return the dummy columns: models after the first, then each rater column's levels after
    its first (the dropped levels are absorbed with the intercept into the clip effects)."""
    columns = [np.eye(len(models))[codes(paired["model"], models)][:, 1:]]
    for rater in raters:
        levels = sorted(pd.unique(paired[rater].astype(str)))
        columns.append(np.eye(len(levels))[codes(paired[rater].astype(str), levels)][:, 1:])
    return np.hstack(columns)


def _demean_within(values: np.ndarray, clip: np.ndarray, n_clips: int) -> np.ndarray:
    """Return ``values`` (rows x k) minus the mean of their clip."""
    counts = np.bincount(clip, minlength=n_clips).astype(float)
    means = clip_sums(clip, values, n_clips) / np.maximum(counts, 1)[:, None]
    return np.asarray(values - means[clip])


def _clip_gram(paired: pd.DataFrame, models: list[str], clips: pd.Index,
               raters: Sequence[str]) -> tuple[np.ndarray, np.ndarray, int]:
    """Return the per-clip Gram matrices (clips x q*q), cross products (clips x q) and q."""
    clip = codes(paired["clip"], clips)
    design = _demean_within(_design(paired, models, raters), clip, len(clips))
    outcome = _demean_within(
        paired["overview_final_verdict"].eq("reject").to_numpy(float)[:, None], clip, len(clips))
    gram = clip_sums(clip, (design[:, :, None] * design[:, None, :]).reshape(len(design), -1),
                     len(clips))
    return gram, clip_sums(clip, design * outcome, len(clips)), design.shape[1]


def identified_pairs(paired: pd.DataFrame, models: list[str], clips: pd.Index,
                     pairs: Sequence[tuple[int, int]], raters: Sequence[str] = RATERS
                     ) -> list[bool]:
    """Whether each pair's adjusted gap is identified on the full data (samples.estimable):
    not on one clip, nor where a model's captions and an annotator's coincide."""
    if not len(clips):
        return [False] * len(pairs)
    gram, _, q = _clip_gram(paired, models, clips, raters)
    normal = gram.sum(axis=0).reshape(q, q)
    found = []
    for a, b in pairs:
        contrast = np.zeros(q)
        # Model columns are the models after the first; the first model's effect is 0.
        if a:
            contrast[a - 1] += 1.0
        if b:
            contrast[b - 1] -= 1.0
        found.append(estimable(normal, contrast))
    return found


def adjusted_model_effects(paired: pd.DataFrame, models: list[str], weights: np.ndarray,
                           clips: pd.Index, raters: Sequence[str] = RATERS) -> np.ndarray:
    """Return model effects (rows of ``weights`` x models; the first model is 0) of the
    additive model with rater and clip effects, one least-squares fit per row of clip counts.
    """
    gram, cross, q = _clip_gram(paired, models, clips, raters)
    normal = (weights @ gram).reshape(-1, q, q)
    solution = np.linalg.pinv(normal, rtol=_RTOL, hermitian=True) @ (weights @ cross)[:, :, None]
    effects = solution[:, : len(models) - 1, 0]
    return np.hstack([np.zeros((len(weights), 1)), effects])


def pairwise_gaps(
    captions: pd.DataFrame,
    *,
    resamples: int = 20_000,
    adjusted_resamples: int = 4_000,
    seed: int = 0,
    alpha: float = ALPHA,
    raters: Sequence[str] = RATERS,
    models: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Return every pair's gap in intervention rate, raw and adjusted, on the paired subset.

    One row per pair (model_a before model_b in ``models`` order); gaps are model_a minus
    model_b in points. Columns: model_a, model_b, clips, rate_a_pct, rate_b_pct, gap_pts,
    ci_low, ci_high, separates, adjusted_gap_pts, adjusted_ci_low, adjusted_ci_high,
    adjusted_separates, adjusted_note, comparisons. Intervals are Bonferroni-corrected over all
    pairs. The minimum-sample rules (:mod:`.samples`) hold: no interval over fewer than 2
    clips, no "separates" on a degenerate interval, and an adjusted gap the additive model
    cannot identify is blank, its ``adjusted_note`` saying why.
    """
    models = models_for(captions, models)
    paired, _ = paired_subset(captions)
    paired = paired[paired["model"].isin(models)]
    outcome, clips = _outcome_matrix(paired, models)
    pairs = list(combinations(range(len(models)), 2))
    level = alpha / max(len(pairs), 1)
    left = [a for a, _ in pairs]
    right = [b for _, b in pairs]

    raw_weights = clip_weights(len(clips), resamples, rng_for(seed, "pairwise_gaps"))
    with np.errstate(invalid="ignore"):
        rates = outcome.mean(axis=0) if len(clips) else np.full(len(models), np.nan)
    raw = (raw_weights @ outcome) / max(len(clips), 1)
    low, high = percentile_interval(100 * (raw[:, left] - raw[:, right]), level)

    adjusted_weights = clip_weights(len(clips), adjusted_resamples,
                                    rng_for(seed, "pairwise_gaps_adjusted"))
    if len(clips):
        point = adjusted_model_effects(paired, models, np.ones((1, len(clips))), clips, raters)[0]
    else:
        point = np.full(len(models), np.nan)
    if len(clips) >= MIN_CLIPS:
        effects = adjusted_model_effects(paired, models, adjusted_weights, clips, raters)
    else:
        effects = np.full((adjusted_resamples, len(models)), np.nan)
    adjusted_low, adjusted_high = percentile_interval(
        100 * (effects[:, left] - effects[:, right]), level)
    identified = np.array(identified_pairs(paired, models, clips, pairs, raters), dtype=bool)
    # The refit's pseudo-inverse leaves rounding errors (-1.9e-14 where the gap is 0): they are
    # written as 0 and carry no flag (samples: a flag needs a clear margin).
    adjusted_gap = snap_to_zero(np.where(identified, 100 * (point[left] - point[right]), np.nan),
                                full_scale=POINTS)
    adjusted_low = snap_to_zero(np.where(identified, adjusted_low, np.nan), full_scale=POINTS)
    adjusted_high = snap_to_zero(np.where(identified, adjusted_high, np.nan), full_scale=POINTS)
    note = np.where(identified, "", "not computable: needs the model effects told apart from "
                    "the annotators' (more clips, or annotators who saw several models)")

    return pd.DataFrame({
        "model_a": [models[a] for a in left],
        "model_b": [models[b] for b in right],
        "clips": len(clips),
        "rate_a_pct": 100 * rates[left],
        "rate_b_pct": 100 * rates[right],
        "gap_pts": 100 * (rates[left] - rates[right]),
        "ci_low": low,
        "ci_high": high,
        "separates": excludes_zero(low, high, full_scale=POINTS),
        "adjusted_gap_pts": adjusted_gap,
        "adjusted_ci_low": adjusted_low,
        "adjusted_ci_high": adjusted_high,
        "adjusted_separates": excludes_zero(adjusted_low, adjusted_high, full_scale=POINTS),
        "adjusted_note": note,
        "comparisons": len(pairs),
    })
