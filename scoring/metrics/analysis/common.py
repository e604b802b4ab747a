"""Small helpers shared by the table functions."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from scoring.metrics.analysis.tidy import model_order


def pct(k: np.ndarray | float, n: np.ndarray | float) -> np.ndarray:
    """Return ``100 * k / n`` as floats, NaN where ``n`` is 0."""
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, 100 * k / np.where(n > 0, n, 1), np.nan)


def models_for(captions: pd.DataFrame, models: Sequence[str] | None) -> list[str]:
    """Return ``models`` as a list, or the paper's order of the models in ``captions``."""
    return list(models) if models is not None else model_order(captions)


def codes(values: pd.Series, categories: Sequence[str] | pd.Index) -> np.ndarray:
    """Return the position of each value in ``categories`` (-1 when absent)."""
    return np.asarray(pd.Index(categories).get_indexer(values))


def clip_codes(captions: pd.DataFrame) -> tuple[np.ndarray, pd.Index]:
    """Return (code of each caption's clip, the clips in code order)."""
    clips = pd.Index(pd.unique(captions["clip"]))
    return clips.get_indexer(captions["clip"]), clips


def count_table(group_codes: np.ndarray, flags: np.ndarray, size: int) -> tuple[np.ndarray,
                                                                              np.ndarray]:
    """Return (successes, totals) per group for boolean ``flags`` (rows with code -1 ignored).

    ``flags`` may be 1-d (one count per group) or 2-d (rows x columns: one count per group and
    column).
    """
    keep = group_codes >= 0
    flags = np.asarray(flags)[keep].astype(float)
    group_codes = group_codes[keep]
    totals = np.bincount(group_codes, minlength=size).astype(float)
    if flags.ndim == 1:
        return np.bincount(group_codes, weights=flags, minlength=size), totals
    successes = np.zeros((size, flags.shape[1]))
    np.add.at(successes, group_codes, flags)
    return successes, totals
