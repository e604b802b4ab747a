"""The judge ensemble as a study leaderboard: per-judge means, Borda, agreement and stability.

Input: one long table of per-item scores, ``scores`` with columns clip, model, judge, value (one
automatic score, e.g. HM-CF, of each model's caption of each clip, by each embedding judge).
The ranking rules are :mod:`scoring.metrics.ranking`'s (CLIP-CC-Bench's Borda).

Which clips a mean is over (``clips``):

- ``own`` (the default, as the paper and CLIP-CC-Bench average): each model's mean under a
  judge is over every clip that model has a score for under that judge, so a model missing a
  clip is averaged over the others;
- ``common``: only clips that every model has a score for under every judge take part, so each
  judge ranks the models on the same items (a stricter variant; means can move when clips drop
  out).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Literal

import numpy as np
import pandas as pd

from scoring.metrics.analysis.samples import MIN_CLIPS
from scoring.metrics.ranking import bootstrap_ranks, borda, kendall_tau, kendalls_w

SCORE_COLUMNS = ("clip", "model", "judge", "value")
#: The leaderboard's columns besides the per-judge ``mean_<judge>`` / ``rank_<judge>``: an empty
#: leaderboard (nothing scored) still has them, so its CSV has a header.
LEADERBOARD_COLUMNS = ("rank", "model", "points", "mean_score", "clips", "share_at_rank",
                       "rank_ci_low", "rank_ci_high", "stability_note")
AGREEMENT_COLUMNS = ("judge_a", "judge_b", "kendall_tau", "kendalls_w")
ClipRule = Literal["own", "common"]
CLIP_RULES: tuple[str, ...] = ("own", "common")
#: How each rule is said in the table's caption.
CLIP_RULE_WORDS: dict[str, str] = {
    "own": "each model's mean is over its own scored clips (the paper's and CLIP-CC-Bench's "
           "convention)",
    "common": "only clips scored for every model under every judge count (common clips)",
}


def common_items(scores: pd.DataFrame) -> pd.DataFrame:
    """Return the rows of clips scored for every model under every judge (missing values out)."""
    scores = scores.dropna(subset=["value"])
    if scores.empty:
        return scores
    cells = scores["model"].nunique() * scores["judge"].nunique()
    per_clip = scores.groupby("clip")[["model", "judge"]].apply(
        lambda rows: len(rows.drop_duplicates()))
    return scores[scores["clip"].isin(per_clip.index[per_clip == cells])]


def leaderboard(scores: pd.DataFrame, *, resamples: int = 1000, seed: int = 0,
                clips: ClipRule = "own", lower_better: Collection[str] = ()
                ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Return (leaderboard, agreement) from per-item judge scores (see the module docstring).

    Leaderboard, best first: rank (Borda, ties broken by the mean across judges, then by model
    name), model, points, mean_score (mean of the per-judge means), ``mean_<judge>`` and
    ``rank_<judge>`` for each judge (rank 1 = highest mean; equal means share the better rank),
    clips (the clips the model's means are over: under ``own`` those it has a score for, under
    ``common`` the clips every model has), and stability over ``resamples`` bootstrap resamples
    of the clips: share_at_rank (how often the model keeps its rank) and rank_ci_low /
    rank_ci_high (central 95% of its ranks; under ``own`` a resample's means are over the drawn
    clips each model has). A model scored on fewer than
    :data:`~scoring.metrics.analysis.samples.MIN_CLIPS` clips (under some judge) has no
    stability: its share and interval are blank and ``stability_note`` says what it needs (on
    one clip every resample draws that clip, so every rank would look certain). Agreement:
    Kendall's tau-b for each pair of judges, then one row "all judges" with Kendall's W (NaN
    with fewer than two models). Both empty without a scored clip (``common``: without a
    common clip). Judges in ``lower_better`` (an imported defect
    count...) rank low values first: their values are negated for ranking, agreement and
    mean_score, and ``mean_<judge>`` shows their own (unnegated) mean.
    """
    if clips not in CLIP_RULES:
        raise ValueError(f"clips must be one of {', '.join(CLIP_RULES)}, got {clips!r}")
    used = common_items(scores) if clips == "common" else scores.dropna(subset=["value"])
    judges = sorted(used["judge"].unique())
    models = sorted(used["model"].unique())
    if used.empty or not models:
        return (pd.DataFrame(columns=list(LEADERBOARD_COLUMNS)),
                pd.DataFrame(columns=list(AGREEMENT_COLUMNS)))
    per_item = (used.drop_duplicates(["clip", "model", "judge"], keep="last")
                .pivot_table(index=["judge", "model"], columns="clip", values="value"))
    sign = np.array([-1.0 if judge in lower_better else 1.0 for judge in judges])
    array = np.stack([per_item.reindex(pd.MultiIndex.from_product([[judge], models]))
                      .to_numpy(float) for judge in judges]) * sign[:, None, None]
    with np.errstate(invalid="ignore"):
        present = ~np.isnan(array)
        judge_means = np.nansum(array, axis=2) / present.sum(axis=2)
    means = {judge: dict(zip(models, judge_means[j].tolist(), strict=True))
             for j, judge in enumerate(judges)}
    rows = {row.model: row for row in borda(means)}
    stability = bootstrap_ranks(array, models, n_boot=resamples, seed=seed, min_items=MIN_CLIPS)
    interval = stability.interval()
    kept = stability.share_at_observed_rank()
    table = pd.DataFrame({
        "rank": [rows[m].rank for m in models], "model": models,
        "points": [rows[m].points for m in models],
        "mean_score": [rows[m].mean_score for m in models]})
    for judge in judges:
        table[f"mean_{judge}"] = [means[judge][m] * (-1 if judge in lower_better else 1)
                                  for m in models]
        ranked = pd.Series(means[judge]).rank(ascending=False, method="min").astype(int)
        table[f"rank_{judge}"] = [int(ranked[m]) for m in models]
    table["clips"] = present.any(axis=0).sum(axis=1)
    table["share_at_rank"] = [kept[m] for m in models]
    table["rank_ci_low"] = pd.array([bounds[0] if (bounds := interval[m]) else pd.NA
                                     for m in models], dtype="Int64")
    table["rank_ci_high"] = pd.array([bounds[1] if (bounds := interval[m]) else pd.NA
                                      for m in models], dtype="Int64")
    table["stability_note"] = [
        "" if interval[m] else (f"not computable: needs at least {MIN_CLIPS} clips with this "
                                f"model's scores under every judge (it has {stability.items[i]})")
        for i, m in enumerate(models)]
    table = table.sort_values("rank", ignore_index=True)
    agreement = [{"judge_a": a, "judge_b": b, "kendall_tau": tau, "kendalls_w": np.nan}
                 for (a, b), tau in kendall_tau(means).items()]
    agreement.append({"judge_a": "all judges", "judge_b": "",
                      "kendall_tau": np.nan,
                      "kendalls_w": kendalls_w(means) if len(models) >= 2 else np.nan})
    return table, pd.DataFrame(agreement)
