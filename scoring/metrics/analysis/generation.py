"""Generation details per model (Table 14)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from scoring.metrics.analysis.common import models_for


def _distinct(values: pd.Series) -> list[str]:
    """Return the distinct non-empty strings of ``values``, sorted."""
    text = values.dropna().astype(str).str.strip()
    return sorted(set(text[text != ""]))


def generation_details(captions: pd.DataFrame, *, models: Sequence[str] | None = None
                       ) -> pd.DataFrame:
    """Return how each model's captions were generated.

    Columns: model, captions, identifier and route (distinct values joined by ', '; '' when the
    optional columns are absent), providers (distinct serving providers; NA without the
    ``provider`` column), tokens_per_second_median (median input tokens per second of video,
    missing values ignored), retried, re_encoded, invalid_kept (caption counts).
    """
    models = models_for(captions, models)
    rows = []
    for model in models:
        own = captions[captions["model"] == model]
        row: dict[str, object] = {"model": model, "captions": len(own)}
        for column in ("identifier", "route"):
            row[column] = ", ".join(_distinct(own[column])) if column in own else ""
        row["providers"] = len(_distinct(own["provider"])) if "provider" in own else pd.NA
        row["tokens_per_second_median"] = float(own["input_tokens_per_second"].median())
        for flag in ("retried", "re_encoded", "invalid_kept"):
            row[flag] = int(own[flag].sum())
        rows.append(row)
    table = pd.DataFrame(rows, columns=["model", "captions", "identifier", "route", "providers",
                                        "tokens_per_second_median", "retried", "re_encoded",
                                        "invalid_kept"])
    table["providers"] = table["providers"].astype("Int64")
    return table
