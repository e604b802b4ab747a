"""Sensitivity of the profile to its annotators: Table 1 and the mode incidences with every
annotator, and without those whose agreement with the gold verdicts fell below a threshold.

Pure: the tidy captions and windows tables in (:mod:`.tidy`; their ``annotator`` column names
whose verdict each caption carries), one table out. Rows:

- **Table 1**: per score, the AUC for separating accepted from rejected final overviews
  (:func:`.metrics.metric_auc`, the pooled AUC and its clip-bootstrap interval);
- **Table 3**: per unit mode and detector (overview pass, window pass), the share of captions
  (%) carrying it (:func:`.modes.overview_flags`, :func:`.modes.window_flags`), with a 95 %
  percentile clip-bootstrap interval.

Each row gives the value with everyone, the value without the excluded annotators' captions,
their intervals and the difference (without - everyone). The minimum-sample rules hold
(:mod:`.samples`): no interval over fewer than ``MIN_CLIPS`` clips; with no caption left, the
row's "without" cells are blank.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import pandas as pd

from scoring.metrics.analysis.common import clip_codes
from scoring.metrics.analysis.metrics import LOWER_ACCEPTS, metric_auc
from scoring.metrics.analysis.modes import overview_flags, window_flags
from scoring.metrics.analysis.samples import MIN_CLIPS, clip_weights
from scoring.metrics.analysis.stats import ALPHA, clip_sums, percentile_interval, ratio_resamples, rng_for
from scoring.metrics.analysis.tidy import UNIT_MODES, windows_of

COLUMNS = [
    "table", "row", "measure", "everyone", "everyone_ci_low", "everyone_ci_high", "everyone_n",
    "without", "without_ci_low", "without_ci_high", "without_n", "difference",
]
CAPTION = (
    "Sensitivity to the annotators: Table 1's AUC per score and Table 3's mode incidences (% of "
    "captions, overview and window detectors), with every annotator and without the captions "
    "whose final verdict was made by an annotator below the gold-agreement threshold (named, "
    "by pseudonym, in the parameters); 95% percentile bootstrap intervals over clips (none "
    "over fewer than 2 clips); n = captions; difference = without - everyone.")


def _auc(captions: pd.DataFrame, *, resamples: int, seed: int, lower_accepts: Collection[str],
         alpha: float) -> dict[str, tuple[float, float, float, int]]:
    if captions.empty:
        return {}
    table = metric_auc(captions, resamples=resamples, seed=seed,
                       lower_accepts=(*LOWER_ACCEPTS, *lower_accepts), alpha=alpha)
    return {row.score: (row.auc, row.ci_low, row.ci_high, int(row.accepted + row.rejected))
            for row in table.itertuples()}


def _incidence(captions: pd.DataFrame, windows: pd.DataFrame, *, resamples: int, seed: int,
               alpha: float) -> dict[str, tuple[float, float, float, int]]:
    """{"<mode> (<detector>)": (share %, low, high, captions)}."""
    if captions.empty:
        return {}
    captions = captions.reset_index(drop=True)
    codes, clips = clip_codes(captions)
    weights = clip_weights(len(clips), resamples, rng_for(seed, "annotator_sensitivity"))
    out = {}
    for detector, flags in (("overview", overview_flags(captions)),
                            ("window", window_flags(captions, windows_of(captions, windows)))):
        values = flags[list(UNIT_MODES)].to_numpy(float)
        per_clip = clip_sums(codes, values, len(clips))
        counts = clip_sums(codes, np.ones((len(captions), 1)), len(clips))
        resampled = ratio_resamples(weights, per_clip, np.repeat(counts, len(UNIT_MODES), axis=1))
        low, high = percentile_interval(resampled, alpha)
        if len(clips) < MIN_CLIPS:
            low = high = np.full(len(UNIT_MODES), np.nan)
        for i, mode in enumerate(UNIT_MODES):
            out[f"{mode} ({detector})"] = (100 * values[:, i].mean(), 100 * low[i], 100 * high[i], len(captions))
    return out


def annotator_sensitivity(
    captions: pd.DataFrame,
    windows: pd.DataFrame,
    *,
    excluded: Collection[str],
    resamples: int = 2_000,
    seed: int = 0,
    lower_accepts: Collection[str] = (),
    alpha: float = ALPHA,
) -> pd.DataFrame:
    """The sensitivity table (see the module docstring): `excluded` are the annotators (as the
    tidy table's ``annotator`` column names them) whose captions the "without" columns leave out."""
    kept = captions[~captions["annotator"].isin(set(excluded))]
    kept_windows = windows_of(kept, windows) if not kept.empty else windows.iloc[0:0]
    rows = []
    for table, measure, everyone, without in (
        ("Table 1", "auc",
         _auc(captions, resamples=resamples, seed=seed, lower_accepts=lower_accepts, alpha=alpha),
         _auc(kept, resamples=resamples, seed=seed, lower_accepts=lower_accepts, alpha=alpha)),
        ("Table 3", "% of captions",
         _incidence(captions, windows, resamples=resamples, seed=seed, alpha=alpha),
         _incidence(kept, kept_windows, resamples=resamples, seed=seed, alpha=alpha)),
    ):
        nan = (np.nan, np.nan, np.nan, 0)
        for name, (value, low, high, n) in everyone.items():
            other = without.get(name, nan)
            rows.append({
                "table": table, "row": name, "measure": measure,
                "everyone": value, "everyone_ci_low": low, "everyone_ci_high": high, "everyone_n": n,
                "without": other[0], "without_ci_low": other[1], "without_ci_high": other[2],
                "without_n": other[3], "difference": other[0] - value,
            })
    return pd.DataFrame(rows, columns=COLUMNS)
