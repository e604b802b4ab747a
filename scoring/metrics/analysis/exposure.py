"""Rejection rate by exposure: does a caption fare differently when its annotator has already
corrected another caption of the same clip?

An annotator who has just corrected one model's caption of a clip knows what to look for in the
next one (anchoring). The captions table's ``exposure`` column says where the annotator met each
caption: 1 = the first caption of its clip, 2 or more = after another one. Comparing rejection
rates of first and later exposures shows whether a study was anchored; a study assigned
one model per clip has only first exposures and cannot be anchored by design.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from scoring.metrics.analysis.common import clip_codes, codes, count_table, models_for, pct
from scoring.metrics.analysis.samples import (
    MIN_GROUP,
    POINTS,
    blank_on_few_clips,
    clip_weights,
    excludes_zero,
    needs_group,
)
from scoring.metrics.analysis.stats import (
    ALPHA,
    clopper_pearson,
    percentile_interval,
    ratio_resamples,
    rng_for,
)
from scoring.metrics.analysis.tidy import windows_of

#: The label of the row that pools every model.
ALL_MODELS = "all models"
GROUPS: tuple[str, ...] = ("first", "later")


def exposure_groups(captions: pd.DataFrame) -> np.ndarray:
    """Return, per caption, 0 for a first exposure, 1 for a later one, -1 when unknown."""
    if "exposure" not in captions.columns:
        return np.full(len(captions), -1)
    exposure = pd.to_numeric(captions["exposure"], errors="coerce").to_numpy(
        dtype=float, na_value=np.nan)
    return np.where(np.isnan(exposure), -1, np.where(exposure >= 2, 1, 0)).astype(int)


def rejection_by_exposure(
    captions: pd.DataFrame,
    windows: pd.DataFrame,
    *,
    resamples: int = 20_000,
    seed: int = 0,
    alpha: float = ALPHA,
    models: Sequence[str] | None = None,
    min_group: int = MIN_GROUP,
) -> pd.DataFrame:
    """Return overview and window rejection rates for first vs later exposures, per model and
    for all models pooled (last row, model :data:`ALL_MODELS`).

    Captions without an exposure are left out. Per group (``first``: exposure 1, ``later``:
    exposure 2 or more): ``<group>_captions`` and ``<group>_overviews_rejected`` (final overview
    rejected), ``<group>_overview_reject_pct`` with its Clopper-Pearson bounds;
    ``<group>_windows`` and ``<group>_windows_rejected`` (final window verdict reject),
    ``<group>_window_reject_pct`` with a clip-bootstrap percentile interval. Differences, later
    minus first in points, ``overview_difference_pts`` and ``window_difference_pts``, each with
    a clip-bootstrap percentile interval (the same resamples for every row and column: first and
    later captions of one clip are not independent), and ``<unit>_difference_excludes_zero``.
    NaN where a group is empty. Rates, bounds and differences are percentages / points. The
    minimum-sample rules (:mod:`.samples`) hold: a row whose groups have fewer than
    ``min_group`` (:data:`.samples.MIN_GROUP`) captions (or lie on fewer than ``MIN_CLIPS``
    clips) has no difference, its ``difference_note`` saying what it needs; no interval over
    fewer than 2 clips; no flag on a degenerate interval.
    """
    models = models_for(captions, models)
    windows = windows_of(captions, windows)
    labels = [*models, ALL_MODELS]
    n_rows = len(labels)
    group = exposure_groups(captions)
    model = codes(captions["model"], models)
    known = (group >= 0) & (model >= 0)
    # Column of each caption in the (row x group) layout: model rows, then the pooled row.
    own = np.where(known, model * 2 + group, -1)
    pooled = np.where(known, (n_rows - 1) * 2 + group, -1)
    n_columns = n_rows * 2

    rejected = captions["overview_final_verdict"].eq("reject").to_numpy()
    caption_k = np.zeros(n_columns)
    caption_n = np.zeros(n_columns)
    for column in (own, pooled):
        k, n = count_table(column, rejected, n_columns)
        caption_k += k
        caption_n += n

    caption_index = pd.MultiIndex.from_frame(captions[["clip", "model"]])
    window_caption = caption_index.get_indexer(pd.MultiIndex.from_frame(windows[["clip", "model"]]))
    window_rejected = windows["final_verdict"].eq("reject").to_numpy(float)
    window_own = own[window_caption] if len(windows) else np.zeros(0, int)
    window_pooled = pooled[window_caption] if len(windows) else np.zeros(0, int)

    clip_of, clips = clip_codes(captions)
    window_clip = clip_of[window_caption] if len(windows) else np.zeros(0, int)
    overview_top = _per_clip(clip_of, (own, pooled), rejected.astype(float), len(clips), n_columns)
    overview_bottom = _per_clip(clip_of, (own, pooled), np.ones(len(captions)), len(clips),
                                n_columns)
    window_top = _per_clip(window_clip, (window_own, window_pooled), window_rejected, len(clips),
                           n_columns)
    window_bottom = _per_clip(window_clip, (window_own, window_pooled), np.ones(len(windows)),
                              len(clips), n_columns)

    weights = clip_weights(len(clips), resamples, rng_for(seed, "rejection_by_exposure"))
    overview_rates = ratio_resamples(weights, overview_top, overview_bottom)
    window_rates = ratio_resamples(weights, window_top, window_bottom)
    window_low, window_high = blank_on_few_clips(*percentile_interval(window_rates, alpha),
                                                 window_bottom)
    overview_diff_low, overview_diff_high = percentile_interval(
        overview_rates[:, 1::2] - overview_rates[:, 0::2], alpha)
    window_diff_low, window_diff_high = percentile_interval(
        window_rates[:, 1::2] - window_rates[:, 0::2], alpha)

    overview_pct = pct(caption_k, caption_n)
    cp_low, cp_high = clopper_pearson(caption_k, caption_n, alpha)
    window_k = window_top.sum(axis=0)
    window_n = window_bottom.sum(axis=0)
    window_pct = pct(window_k, window_n)

    table = pd.DataFrame({"model": labels})
    _add_rate_columns(table, "overview", ("captions", "overviews_rejected"), caption_n, caption_k,
                      overview_pct, (cp_low, cp_high), (overview_diff_low, overview_diff_high))
    _add_rate_columns(table, "window", ("windows", "windows_rejected"), window_n, window_k,
                      window_pct, (window_low, window_high), (window_diff_low, window_diff_high))
    clips_with = (overview_bottom > 0).sum(axis=0)
    notes = [needs_group({name: int(caption_n[2 * row + g]) for g, name in enumerate(GROUPS)},
                         {name: int(clips_with[2 * row + g]) for g, name in enumerate(GROUPS)},
                         min_group)
             for row in range(n_rows)]
    small = np.array([bool(note) for note in notes])
    for unit in ("overview", "window"):
        for part in ("difference_pts", "difference_ci_low", "difference_ci_high"):
            table.loc[small, f"{unit}_{part}"] = np.nan
        table[f"{unit}_difference_excludes_zero"] = excludes_zero(
            table[f"{unit}_difference_ci_low"], table[f"{unit}_difference_ci_high"],
            full_scale=POINTS)
    table["difference_note"] = notes
    return table


def _add_rate_columns(table: pd.DataFrame, unit: str, counts: tuple[str, str], n: np.ndarray,
                      k: np.ndarray, rate_pct: np.ndarray, interval: tuple[np.ndarray, np.ndarray],
                      difference: tuple[np.ndarray, np.ndarray]) -> None:
    """Add one unit's columns: per exposure group (interleaved first, later in the arrays) the
    count, rejected count, rate and its interval; then the later-minus-first difference."""
    total, rejected = counts
    for offset, name in enumerate(GROUPS):
        at = slice(offset, None, 2)
        table[f"{name}_{total}"] = n[at].astype(int)
        table[f"{name}_{rejected}"] = k[at].astype(int)
        table[f"{name}_{unit}_reject_pct"] = rate_pct[at]
        table[f"{name}_{unit}_ci_low"] = 100 * interval[0][at]
        table[f"{name}_{unit}_ci_high"] = 100 * interval[1][at]
    table[f"{unit}_difference_pts"] = rate_pct[1::2] - rate_pct[0::2]
    table[f"{unit}_difference_ci_low"] = 100 * difference[0]
    table[f"{unit}_difference_ci_high"] = 100 * difference[1]


def _per_clip(clip: np.ndarray, columns: tuple[np.ndarray, ...], values: np.ndarray,
              n_clips: int, n_columns: int) -> np.ndarray:
    """Return (clips x columns) sums of ``values``, each row added to every column it has."""
    out = np.zeros((n_clips, n_columns))
    for column in columns:
        keep = column >= 0
        np.add.at(out, (clip[keep], column[keep]), values[keep])
    return out
