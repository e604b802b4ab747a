"""Outcome rates per model: intervention, correctness, untouched shares, window dependence.

All of these read the *final* verdict and the final corrected text, except
:func:`accepted_with_rejected_window`, which compares the two verdicts of the same annotator.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from scoring.metrics.analysis.common import clip_codes, codes, count_table, models_for, pct
from scoring.metrics.analysis.samples import blank_on_few_clips, clip_weights
from scoring.metrics.analysis.stats import (
    ALPHA,
    binomial_expected,
    clip_sums,
    clopper_pearson,
    percentile_interval,
    ratio_resamples,
    rng_for,
)
from scoring.metrics.analysis.tidy import (
    FIELDS,
    Pass,
    any_by_caption,
    caption_positions,
    count_by_caption,
    near_total_windows,
    paired_subset,
    windows_of,
)
from scoring.metrics.edits import NEAR_TOTAL_CUT, WORD_THRESHOLDS


def intervention_rate(
    captions: pd.DataFrame,
    *,
    thresholds: Sequence[int] = WORD_THRESHOLDS,
    models: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Return each model's overview intervention rate at each word threshold (Table 2).

    A caption fails at threshold ``t`` when its final overview correction changed at least
    ``t`` words. Columns: model, captions, then ``intervention_ge{t}_pct`` per threshold.
    """
    models = models_for(captions, models)
    group = codes(captions["model"], models)
    words = captions["overview_words_changed"].to_numpy(float)
    fails = words[:, None] >= np.asarray(thresholds, dtype=float)[None, :]
    k, n = count_table(group, fails, len(models))
    table = pd.DataFrame({"model": models, "captions": n.astype(int)})
    for column, threshold in enumerate(thresholds):
        table[f"intervention_ge{threshold}_pct"] = pct(k[:, column], n)
    return table


def correctness(
    captions: pd.DataFrame,
    windows: pd.DataFrame,
    *,
    near_total_cut: float = NEAR_TOTAL_CUT,
    resamples: int = 20_000,
    seed: int = 0,
    alpha: float = ALPHA,
    models: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Return correct overview, correct window and critical rates per model (Table 5).

    - correct overview: final overview accepted as written; Clopper-Pearson interval;
    - correct window: share of the model's windows whose final verdict is accept; percentile
      interval of a bootstrap over clips (``resamples`` resamples, clip-clustered because the
      windows of one caption, and the captions of one clip, are not independent);
    - critical: share of captions with at least one near-total window repair: a changed scene
      or shot field of a finally rejected window whose character similarity is below
      ``near_total_cut`` (:func:`~scoring.metrics.analysis.tidy.near_total_windows`, the rule and
      unit of Table 6's near-total); Clopper-Pearson interval.
    All rates and bounds are percentages.
    """
    models = models_for(captions, models)
    windows = windows_of(captions, windows)
    group = codes(captions["model"], models)
    correct_k, n = count_table(group, captions["overview_final_verdict"].eq("accept").to_numpy(),
                               len(models))
    positions = caption_positions(captions, windows)
    near_total = near_total_windows(windows, near_total_cut)
    critical = any_by_caption(near_total, positions, len(captions))
    critical_k, _ = count_table(group, critical, len(models))
    table = pd.DataFrame({"model": models, "captions": n.astype(int)})
    _add_exact(table, "correct_overview", correct_k, n, alpha)
    window_table = _correct_window(captions, windows, models, resamples, seed, alpha)
    table = pd.concat([table, window_table], axis=1)
    _add_exact(table, "critical", critical_k, n, alpha)
    return table


def _add_exact(table: pd.DataFrame, name: str, k: np.ndarray, n: np.ndarray, alpha: float) -> None:
    """Add ``<name>_k``, ``<name>_pct`` and its Clopper-Pearson bounds to ``table``."""
    low, high = clopper_pearson(k, n, alpha)
    table[f"{name}_k"] = k.astype(int)
    table[f"{name}_pct"] = pct(k, n)
    table[f"{name}_ci_low"] = 100 * low
    table[f"{name}_ci_high"] = 100 * high


def _correct_window(captions: pd.DataFrame, windows: pd.DataFrame, models: list[str],
                    resamples: int, seed: int, alpha: float) -> pd.DataFrame:
    """Return windows, correct_window_pct and its clip-bootstrap interval per model."""
    _, clips = clip_codes(captions)
    window_clip = codes(windows["clip"], clips)
    window_model = codes(windows["model"], models)
    accepted = windows["final_verdict"].eq("accept").to_numpy(float)
    by_model = np.eye(len(models))[window_model]
    numerators = clip_sums(window_clip, by_model * accepted[:, None], len(clips))
    denominators = clip_sums(window_clip, by_model, len(clips))
    weights = clip_weights(len(clips), resamples, rng_for(seed, "correct_window"))
    low, high = blank_on_few_clips(
        *percentile_interval(ratio_resamples(weights, numerators, denominators), alpha),
        denominators)
    total = denominators.sum(axis=0)
    return pd.DataFrame({
        "windows": total.astype(int),
        "correct_window_pct": pct(numerators.sum(axis=0), total),
        "correct_window_ci_low": 100 * low,
        "correct_window_ci_high": 100 * high,
    })


def accepted_with_rejected_window(
    captions: pd.DataFrame,
    windows: pd.DataFrame,
    *,
    alpha: float = ALPHA,
    models: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Return, per model, the share of overviews accepted whole that hold a rejected window (Fig 3).

    Both verdicts are the annotator's own (same person, same sitting): an overview the
    annotator accepted, with at least one window the annotator rejected. Columns: model,
    accepted_overviews, with_rejected_window, pct and Clopper-Pearson bounds, plus the pooled
    rate over all models (the same on every row).
    """
    models = models_for(captions, models)
    windows = windows_of(captions, windows)
    rejected = windows["annotator_verdict"].eq("reject").to_numpy()
    has_rejected = any_by_caption(rejected, caption_positions(captions, windows), len(captions))
    accepted = captions["overview_annotator_verdict"].eq("accept").to_numpy()
    group = np.where(accepted, codes(captions["model"], models), -1)
    k, n = count_table(group, has_rejected, len(models))
    low, high = clopper_pearson(k, n, alpha)
    return pd.DataFrame({
        "model": models,
        "accepted_overviews": n.astype(int),
        "with_rejected_window": k.astype(int),
        "pct": pct(k, n),
        "ci_low": 100 * low,
        "ci_high": 100 * high,
        "pooled_pct": float(pct(k.sum(), n.sum())),
    })


def windows_rejected_per_caption(
    captions: pd.DataFrame,
    windows: pd.DataFrame,
    *,
    windows_per_caption: int = 4,
    pass_: Pass = "final",
    models: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Return the distribution of rejected windows per caption against independence (Figure 4).

    Only captions with exactly ``windows_per_caption`` windows count. Expected: the sum over
    models of ``n_m * Binomial(K, p_m)``, where ``p_m`` is the model's window rejection rate on
    those captions (so observed and expected have the same mean and differ only in shape).
    Columns: rejected_windows (0..K), captions_observed, captions_expected, observed_pct,
    expected_pct.
    """
    models = models_for(captions, models)
    windows = windows_of(captions, windows)
    size = windows_per_caption
    positions = caption_positions(captions, windows)
    per_caption = count_by_caption(np.ones(len(windows), bool), positions, len(captions))
    rejected = count_by_caption(windows[f"{pass_}_verdict"].eq("reject").to_numpy(), positions,
                                len(captions))
    eligible = per_caption == size
    observed = np.bincount(rejected[eligible], minlength=size + 1)[: size + 1].astype(float)
    group = np.where(eligible, codes(captions["model"], models), -1)
    rejected_sum, n = count_table(group, rejected, len(models))
    expected = np.zeros(size + 1)
    for model_n, model_rejected in zip(n, rejected_sum, strict=True):
        if model_n:
            expected += binomial_expected(model_n, size, model_rejected / (model_n * size))
    total = observed.sum()
    return pd.DataFrame({
        "rejected_windows": np.arange(size + 1),
        "captions_observed": observed.astype(int),
        "captions_expected": expected,
        "observed_pct": pct(observed, total),
        "expected_pct": pct(expected, total),
    })


def models_failing_per_clip(captions: pd.DataFrame) -> pd.DataFrame:
    """Return how many models fail each paired clip, against a binomial at the pooled rate (Fig 8).

    Paired subset only (clips with a final verdict from every model); a model fails a clip
    when its final overview is rejected. Expected: ``clips * Binomial(models, pooled rate)``.
    Columns: models_failing (0..M), clips_observed, clips_expected, observed_pct, expected_pct,
    pooled_rate_pct (the same on every row).
    """
    paired, _ = paired_subset(captions)
    n_models = captions["model"].nunique()
    failing = paired["overview_final_verdict"].eq("reject").groupby(paired["clip"]).sum()
    n_clips = len(failing)
    observed = np.bincount(failing.to_numpy(int), minlength=n_models + 1).astype(float)
    pooled = float(failing.sum() / (n_clips * n_models)) if n_clips else float("nan")
    expected = (binomial_expected(n_clips, n_models, pooled) if n_clips
                else np.zeros(n_models + 1))
    return pd.DataFrame({
        "models_failing": np.arange(n_models + 1),
        "clips_observed": observed.astype(int),
        "clips_expected": expected,
        "observed_pct": pct(observed, n_clips),
        "expected_pct": pct(expected, n_clips),
        "pooled_rate_pct": 100 * pooled,
    })


def untouched(
    captions: pd.DataFrame,
    windows: pd.DataFrame,
    *,
    models: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Return each component's untouched share and the rewritten share per model (Table 8).

    Untouched: overview with 0 words changed, scene / shot field not changed (per window),
    segmentation judgement accepted (per caption), all in the final pass. Rewritten: share of
    all characters of overview, scene and shot text changed, counted as the characters outside
    the alignment on both sides, ``sum((1 - similarity) * (original + corrected chars)) /
    sum(original + corrected chars)``; accepted text counts as unchanged (similarity 1).
    """
    models = models_for(captions, models)
    windows = windows_of(captions, windows)
    caption_group = codes(captions["model"], models)
    window_group = codes(windows["model"], models)
    n_models = len(models)
    overview_k, n = count_table(caption_group,
                                captions["overview_words_changed"].eq(0).to_numpy(), n_models)
    segmentation_k, _ = count_table(
        caption_group, captions["segmentation_final_verdict"].eq("accept").to_numpy(), n_models)
    table = pd.DataFrame({"model": models, "captions": n.astype(int)})
    table["windows"] = np.bincount(window_group[window_group >= 0], minlength=n_models)
    table["overview_untouched_pct"] = pct(overview_k, n)
    for field in FIELDS:
        k, w = count_table(window_group, ~windows[f"{field}_changed"].to_numpy(bool), n_models)
        table[f"{field}_untouched_pct"] = pct(k, w)
    table["segmentation_untouched_pct"] = pct(segmentation_k, n)
    changed, total = _changed_characters(captions, windows, caption_group, window_group, n_models)
    table["rewritten_pct"] = pct(changed, total)
    return table


def _changed_characters(captions: pd.DataFrame, windows: pd.DataFrame, caption_group: np.ndarray,
                        window_group: np.ndarray, n_models: int) -> tuple[np.ndarray, np.ndarray]:
    """Return (changed characters, all characters) per model over overview and window text."""
    texts = [(captions, caption_group, "overview")] + [(windows, window_group, f) for f in FIELDS]
    changed = np.zeros(n_models)
    total = np.zeros(n_models)
    for frame, group, prefix in texts:
        size = (frame[f"{prefix}_original_chars"].to_numpy(float)
                + frame[f"{prefix}_corrected_chars"].to_numpy(float))
        outside = (1 - frame[f"{prefix}_char_similarity"].to_numpy(float)) * size
        keep = group >= 0
        changed += np.bincount(group[keep], weights=outside[keep], minlength=n_models)
        total += np.bincount(group[keep], weights=size[keep], minlength=n_models)
    return changed, total
