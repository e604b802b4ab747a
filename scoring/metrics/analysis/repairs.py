"""Repair direction of window fields (Table 9) and the per-model profile (Table 10)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from scoring.metrics.analysis.common import codes, models_for, pct
from scoring.metrics.analysis.tidy import FIELDS, MODES, windows_of
from scoring.metrics.edits import LENGTH_BAND

#: Bands (relative length change) at which direction is reported; the primary band is 5%.
BANDS: tuple[float, ...] = (0.0, LENGTH_BAND, 0.10)
ADDITIVE_CUT = 0.55
SUBSTITUTIVE_CUT = 0.45


def _band_name(band: float) -> str:
    """Return a band as it appears in column names: 0.05 -> 'band5'."""
    return f"band{round(band * 100):g}"


def field_repairs(windows: pd.DataFrame) -> pd.DataFrame:
    """Return one row per repair: a changed scene or shot field of a finally rejected window.

    Columns: model, field, original_chars, corrected_chars, length_change (relative change in
    characters; +inf when an empty field was filled in, as :func:`scoring.metrics.edits.length_change`).
    """
    rejected = windows["final_verdict"].eq("reject").to_numpy()
    parts = []
    for field in FIELDS:
        keep = rejected & windows[f"{field}_changed"].to_numpy(bool)
        before = windows.loc[keep, f"{field}_original_chars"].to_numpy(float)
        after = windows.loc[keep, f"{field}_corrected_chars"].to_numpy(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            change = np.where(before > 0, (after - before) / np.where(before > 0, before, 1),
                              np.where(after > 0, np.inf, 0.0))
        parts.append(pd.DataFrame({"model": windows.loc[keep, "model"].to_numpy(), "field": field,
                                   "original_chars": before, "corrected_chars": after,
                                   "length_change": change}))
    return pd.concat(parts, ignore_index=True)


def direction_profile(lengthened_share: float, *, additive_cut: float = ADDITIVE_CUT,
                      substitutive_cut: float = SUBSTITUTIVE_CUT) -> str:
    """Return 'additive' (>= additive_cut lengthened), 'substitutive' (< substitutive_cut), else
    'mixed'; '' when the share is unknown (a model without repairs)."""
    if np.isnan(lengthened_share):
        return ""
    if lengthened_share >= additive_cut:
        return "additive"
    if lengthened_share < substitutive_cut:
        return "substitutive"
    return "mixed"


def repair_direction(
    captions: pd.DataFrame,
    windows: pd.DataFrame,
    *,
    bands: Sequence[float] = BANDS,
    primary_band: float = LENGTH_BAND,
    additive_cut: float = ADDITIVE_CUT,
    substitutive_cut: float = SUBSTITUTIVE_CUT,
    models: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Return the direction of each model's window repairs (Table 9).

    A repair lengthens when its relative length change is above ``+band``, shortens below
    ``-band``, and keeps the length otherwise (closed band). Columns: model, repairs, then per
    band ``lengthened_pct_band<b>``, ``shortened_pct_band<b>``, ``same_pct_band<b>``,
    median_length_change_pct, and profile (additive / substitutive / mixed at
    ``primary_band``). Rows are ordered by the share lengthened at ``primary_band``.
    """
    models = models_for(captions, models)
    repairs = field_repairs(windows_of(captions, windows))
    group = codes(repairs["model"], models)
    keep = group >= 0
    group, change = group[keep], repairs["length_change"].to_numpy(float)[keep]
    n = np.bincount(group, minlength=len(models)).astype(float)
    table = pd.DataFrame({"model": models, "repairs": n.astype(int)})
    for band in sorted({*bands, primary_band}):
        name = _band_name(band)
        longer = np.bincount(group, weights=(change > band).astype(float), minlength=len(models))
        shorter = np.bincount(group, weights=(change < -band).astype(float),
                              minlength=len(models))
        table[f"lengthened_pct_{name}"] = pct(longer, n)
        table[f"shortened_pct_{name}"] = pct(shorter, n)
        table[f"same_pct_{name}"] = pct(n - longer - shorter, n)
    medians = pd.Series(change).groupby(group).median()
    table["median_length_change_pct"] = 100 * medians.reindex(range(len(models))).to_numpy()
    primary = table[f"lengthened_pct_{_band_name(primary_band)}"] / 100
    table["profile"] = [direction_profile(share, additive_cut=additive_cut,
                                          substitutive_cut=substitutive_cut) for share in primary]
    order = primary.sort_values(ascending=False, kind="stable", na_position="last").index
    return table.loc[order].reset_index(drop=True)


def _top_modes(row: pd.Series, count: int = 2) -> tuple[str, list[tuple[str, float]]]:
    """Return the paper's "factual 24.9; omission 16.6" text and the top (mode, pct) pairs.

    Modes tied at one decimal are joined with " = " and take one place together.
    """
    ranked = sorted(((mode, float(row[f"{mode}_pct"])) for mode in MODES),
                    key=lambda item: (-round(item[1], 1), MODES.index(item[0])))
    groups: list[list[tuple[str, float]]] = []
    for mode, value in ranked:
        if groups and round(groups[-1][0][1], 1) == round(value, 1):
            groups[-1].append((mode, value))
        elif len(groups) < count:
            groups.append([(mode, value)])
        else:
            break
    text = "; ".join(" = ".join(m for m, _ in group) + f" {group[0][1]:.1f}" for group in groups)
    return text, [item for group in groups for item in group][:count]


def model_profile(
    correctness: pd.DataFrame,
    by_model: pd.DataFrame,
    penalty: pd.DataFrame,
    repairs: pd.DataFrame,
    *,
    primary_band: float = LENGTH_BAND,
) -> pd.DataFrame:
    """Return the one-row-per-model profile of Table 10, assembled from other tables.

    Inputs: :func:`~scoring.metrics.analysis.rates.correctness` (paired subset, for accuracy),
    :func:`~scoring.metrics.analysis.modes.mode_incidence_by_model` (window detector, all captions),
    :func:`~scoring.metrics.analysis.properties.difficulty_penalty` and :func:`repair_direction`.
    Columns: model, accuracy_pct, top_modes, mode_1, mode_1_pct, mode_2, mode_2_pct,
    handheld_penalty_pts, lengthened_pct, shortened_pct, same_pct, direction.
    """
    name = _band_name(primary_band)
    rows = []
    for _, row in by_model.iterrows():
        text, top = _top_modes(row)
        top = top + [("", float("nan"))] * (2 - len(top))
        rows.append({"model": row["model"], "top_modes": text,
                     "mode_1": top[0][0], "mode_1_pct": top[0][1],
                     "mode_2": top[1][0], "mode_2_pct": top[1][1]})
    table = pd.DataFrame(rows)
    accuracy = correctness.set_index("model")["correct_overview_pct"]
    table.insert(1, "accuracy_pct", table["model"].map(accuracy).astype(float))
    handheld = penalty.set_index("model")["handheld_penalty_pts"]
    table["handheld_penalty_pts"] = table["model"].map(handheld).astype(float)
    directions = repairs.set_index("model")
    for kind in ("lengthened", "shortened", "same"):
        table[f"{kind}_pct"] = table["model"].map(directions[f"{kind}_pct_{name}"]).astype(float)
    table["direction"] = table["model"].map(directions["profile"]).fillna("")
    return table
