"""Failure-mode incidence by detector (overview pass vs window pass) and its robustness checks.

A *detector* says which verdicts find a mode on a caption:

- overview detector: the mode is tagged on the caption's rejected overview;
- window detector: the mode is tagged on at least one rejected window of the caption; for
  segmentation (caption-level only), the caption's segmentation judgement is rejected.

The paper's primary detector reads the QC-pass (final) overview and the annotator-pass windows
(Table 4, first row); the robustness variants change the passes, enforce camera-over-factual
precedence on every unit, or change the captions analysed. Incidence is a floor: modes are
recorded only on rejected units.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from scoring.metrics.analysis.common import codes, count_table, models_for, pct
from scoring.metrics.analysis.stats import ALPHA, clopper_pearson
from scoring.metrics.analysis.tidy import (
    MODES,
    UNIT_MODES,
    Pass,
    any_by_caption,
    caption_positions,
    paired_subset,
    window_repairs,
    windows_of,
)
from scoring.metrics.edits import NEAR_TOTAL_CUT


@dataclass(frozen=True)
class Detector:
    """Which pass each granularity is read from, and whether precedence is enforced."""

    overview_pass: Pass = "final"
    window_pass: Pass = "annotator"
    #: Camera over factual: a unit tagged both camera and factual counts as camera only.
    precedence: bool = False


PRIMARY = Detector()


def _apply_precedence(flags: pd.DataFrame) -> pd.DataFrame:
    """Return unit flags with factual dropped wherever camera is tagged on the same unit."""
    flags = flags.copy()
    flags["factual"] = flags["factual"] & ~flags["camera"]
    return flags


def overview_flags(captions: pd.DataFrame, detector: Detector = PRIMARY) -> pd.DataFrame:
    """Return, per caption, which unit modes the overview detector finds (captions x UNIT_MODES)."""
    prefix = f"overview_{detector.overview_pass}"
    rejected = captions[f"{prefix}_verdict"].eq("reject").to_numpy()
    flags = pd.DataFrame({mode: captions[f"{prefix}_{mode}"].to_numpy(bool) & rejected
                          for mode in UNIT_MODES}, index=captions.index)
    return _apply_precedence(flags) if detector.precedence else flags


def rejected_window_flags(windows: pd.DataFrame, detector: Detector = PRIMARY) -> pd.DataFrame:
    """Return, per window, the unit modes it carries as a rejected window (windows x UNIT_MODES)."""
    prefix = detector.window_pass
    rejected = windows[f"{prefix}_verdict"].eq("reject").to_numpy()
    flags = pd.DataFrame({mode: windows[f"{prefix}_{mode}"].to_numpy(bool) & rejected
                          for mode in UNIT_MODES}, index=windows.index)
    return _apply_precedence(flags) if detector.precedence else flags


def window_flags(captions: pd.DataFrame, windows: pd.DataFrame,
                 detector: Detector = PRIMARY) -> pd.DataFrame:
    """Return, per caption, which modes the window detector finds (captions x MODES)."""
    windows = windows_of(captions, windows)
    positions = caption_positions(captions, windows)
    per_window = rejected_window_flags(windows, detector)
    flags = {mode: any_by_caption(per_window[mode].to_numpy(), positions, len(captions))
             for mode in UNIT_MODES}
    segmentation = captions[f"segmentation_{detector.window_pass}_verdict"].eq("reject")
    flags["segmentation"] = segmentation.to_numpy()
    return pd.DataFrame({mode: flags[mode] for mode in MODES}, index=captions.index)


def mode_incidence(captions: pd.DataFrame, windows: pd.DataFrame,
                   detector: Detector = PRIMARY) -> pd.DataFrame:
    """Return each unit mode's share of captions under both detectors and their ratio (Table 3).

    Columns: mode, captions, overview_k, overview_pct, window_k, window_pct, ratio (window /
    overview share; NaN when the overview detector found none).
    """
    by_overview = overview_flags(captions, detector)
    by_window = window_flags(captions, windows, detector)
    n = len(captions)
    overview_k = by_overview[list(UNIT_MODES)].sum().to_numpy(float)
    window_k = by_window[list(UNIT_MODES)].sum().to_numpy(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(overview_k > 0, window_k / np.where(overview_k > 0, overview_k, 1), np.nan)
    return pd.DataFrame({
        "mode": list(UNIT_MODES),
        "captions": n,
        "overview_k": overview_k.astype(int),
        "overview_pct": pct(overview_k, n),
        "window_k": window_k.astype(int),
        "window_pct": pct(window_k, n),
        "ratio": ratio,
    })


#: The robustness variants of Table 4: name -> (description, detector, caption subset).
VARIANTS: dict[str, tuple[str, Detector, str]] = {
    "primary": ("QC-pass overview, annotator-pass windows, all captions", PRIMARY, "all"),
    "annotator_both": ("annotator pass at both levels", Detector("annotator", "annotator"), "all"),
    "qc_both": ("QC pass at both levels", Detector("final", "final"), "all"),
    "precedence": ("camera-over-factual precedence enforced on every unit",
                   Detector(precedence=True), "all"),
    "paired": ("paired subset (clips with a final verdict from every model)", PRIMARY, "paired"),
    "no_manipulated": ("manipulated control clips excluded", PRIMARY, "no_manipulated"),
}


def _subset(captions: pd.DataFrame, windows: pd.DataFrame, which: str
            ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Return the captions (and windows) a variant analyses."""
    if which == "paired":
        paired, paired_windows = paired_subset(captions, windows)
        assert paired_windows is not None
        return paired, paired_windows
    if which == "no_manipulated":
        kept = captions[~captions["manipulated"].to_numpy(bool)]
        return kept, windows_of(kept, windows)
    return captions, windows


def mode_incidence_variants(captions: pd.DataFrame, windows: pd.DataFrame) -> pd.DataFrame:
    """Return Table 3 under every robustness variant of Table 4, stacked (one row per mode).

    Columns: variant, description, then the columns of :func:`mode_incidence`.
    """
    parts = []
    for name, (description, detector, which) in VARIANTS.items():
        subset, subset_windows = _subset(captions, windows, which)
        part = mode_incidence(subset, subset_windows, detector)
        part.insert(0, "description", description)
        part.insert(0, "variant", name)
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


def mode_incidence_by_model(
    captions: pd.DataFrame,
    windows: pd.DataFrame,
    *,
    detector: Detector = PRIMARY,
    alpha: float = ALPHA,
    models: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Return each model's share of captions carrying each mode, window detector (Table 7).

    Columns: model, captions, then per mode in ``MODES``: ``<mode>_pct`` with Clopper-Pearson
    bounds ``<mode>_ci_low`` / ``<mode>_ci_high`` (Figure 7).
    """
    models = models_for(captions, models)
    flags = window_flags(captions, windows, detector)
    k, n = count_table(codes(captions["model"], models), flags[list(MODES)].to_numpy(), len(models))
    table = pd.DataFrame({"model": models, "captions": n.astype(int)})
    for column, mode in enumerate(MODES):
        low, high = clopper_pearson(k[:, column], n, alpha)
        table[f"{mode}_pct"] = pct(k[:, column], n)
        table[f"{mode}_ci_low"] = 100 * low
        table[f"{mode}_ci_high"] = 100 * high
    return table


def mode_severity(
    captions: pd.DataFrame,
    windows: pd.DataFrame,
    *,
    detector: Detector = PRIMARY,
    near_total_cut: float = NEAR_TOTAL_CUT,
) -> pd.DataFrame:
    """Return each mode's incidence and severity pooled over models (Table 6).

    The unit of severity is the *window repair* of Table 9 (:func:`window_repairs`: a changed
    scene or shot field of a finally rejected window); a repair carries a mode when its window
    is rejected with that mode in the detector's window pass.

    - captions_pct: share of captions carrying the mode (window detector);
    - repairs: window repairs carrying the mode; near_total_repairs / near_total_pct: those
      (share of those) whose field's character similarity is below ``near_total_cut``;
    - per_100: captions per hundred with at least one near-total repair carrying the mode.
    Segmentation is caption-level: its severity columns are empty. A last row, ``all
    repairs``, counts every repair whatever its modes: the same repairs as Table 9.
    """
    windows = windows_of(captions, windows).reset_index(drop=True)
    positions = caption_positions(captions, windows)
    caption_flags = window_flags(captions, windows, detector)
    unit_flags = rejected_window_flags(windows, detector)
    repairs = window_repairs(windows)
    at = repairs["window"].to_numpy(int)
    severe = repairs["char_similarity"].to_numpy(float) < near_total_cut
    n = len(captions)

    def severity(carries: np.ndarray) -> dict[str, float | int]:
        hit = carries & severe
        severe_captions = int(any_by_caption(np.bincount(at[hit], minlength=len(windows)) > 0,
                                             positions, n).sum())
        return {"repairs": int(carries.sum()), "near_total_repairs": int(hit.sum()),
                "near_total_pct": float(pct(hit.sum(), carries.sum())),
                "near_total_captions_k": severe_captions, "per_100": float(pct(severe_captions, n))}

    rows = []
    for mode in MODES:
        k = int(caption_flags[mode].sum())
        row = {"mode": mode, "captions": n, "captions_k": k, "captions_pct": float(pct(k, n))}
        if mode in UNIT_MODES:
            row |= severity(unit_flags[mode].to_numpy(bool)[at])
        rows.append(row)
    rows.append({"mode": "all repairs", "captions": n} | severity(np.ones(len(at), dtype=bool)))
    table = pd.DataFrame(rows)
    for column in ("captions_k", "repairs", "near_total_repairs", "near_total_captions_k"):
        table[column] = table[column].astype("Int64")
    return table


def omission_vs_factual(by_model: pd.DataFrame) -> pd.DataFrame:
    """Return each model's factual and omission rates with their Pearson r (Figure 10).

    ``by_model`` is a :func:`mode_incidence_by_model` table. Columns: model, captions,
    factual_pct, omission_pct, pearson_r and pearson_p (the same on every row; NaN with fewer
    than three models or a constant rate, where r says nothing, and then ``pearson_note`` says
    "not computable: needs ..."; '' otherwise).
    """
    table = by_model[["model", "captions", "factual_pct", "omission_pct"]].copy()
    valid = table.dropna(subset=["factual_pct", "omission_pct"])
    r = p = float("nan")
    if (len(valid) >= 3 and valid["factual_pct"].nunique() > 1
            and valid["omission_pct"].nunique() > 1):
        result = stats.pearsonr(valid["factual_pct"], valid["omission_pct"])
        r, p = float(result.statistic), float(result.pvalue)
    table["pearson_r"] = r
    table["pearson_p"] = p
    note = ""
    if np.isnan(r):
        note = ("not computable: needs at least 3 models with a factual and an omission rate "
                f"({len(valid)} here)" if len(valid) < 3 else
                "not computable: needs rates that differ between models (a constant rate has "
                "no correlation)")
    table["pearson_note"] = note
    return table
