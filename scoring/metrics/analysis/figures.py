"""The paper's figures, drawn from the failure-profile tables.

Every function takes the table(s) :func:`scoring.metrics.analysis.failure_profile` returns and gives back
a :class:`matplotlib.figure.Figure` drawn on the Agg canvas (no pyplot, so no global figure
state and no display needed). The only file I/O is :func:`save_figure`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib import rc_context
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from scoring.metrics.analysis.tidy import MODES

GREY = "#8c8c8c"
BLUE = "#1f77b4"
RED = "#d62728"
MODE_LABELS = {"factual": "Factual error", "omission": "Important omission",
               "camera": "Camera / shot", "segmentation": "Segmentation",
               "inference": "Unsupported inference", "temporal": "Temporal / order"}


def _figure(width: float = 6.4, height: float = 4.0) -> Figure:
    """Return an empty figure attached to the Agg canvas."""
    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _interval_errors(pct: pd.Series, low: pd.Series, high: pd.Series) -> np.ndarray:
    """Return matplotlib's (2 x n) error-bar lengths for point estimates and their bounds."""
    return np.vstack([(pct - low).to_numpy(float), (high - pct).to_numpy(float)]).clip(min=0)


def intervention_by_threshold(table: pd.DataFrame) -> Figure:
    """Figure 1: intervention rate per model as small corrections are discarded (Table 2)."""
    columns = [c for c in table.columns if re.fullmatch(r"intervention_ge\d+_pct", c)]
    thresholds = [int(re.findall(r"\d+", c)[0]) for c in columns]
    figure = _figure()
    axes = figure.add_subplot()
    for _, row in table.iterrows():
        values = row[columns].to_numpy(float)
        axes.plot(range(len(thresholds)), values, marker="o", label=row["model"])
    axes.set_xticks(range(len(thresholds)),
                    ["any" if t == 1 else f">= {t} words" for t in thresholds])
    axes.set_ylabel("Overview intervention rate (%)")
    axes.set_xlabel("Evidence threshold (words changed)")
    axes.legend(fontsize="small", frameon=False)
    axes.set_ylim(bottom=0)
    return figure


def mode_incidence_by_detector(table: pd.DataFrame) -> Figure:
    """Figure 2: share of captions carrying each mode, overview pass vs window pass (Table 3)."""
    table = table.sort_values("ratio", ascending=True, na_position="first")
    figure = _figure()
    axes = figure.add_subplot()
    positions = np.arange(len(table))
    axes.barh(positions - 0.2, table["overview_pct"], height=0.4, color=GREY, label="Overview pass")
    axes.barh(positions + 0.2, table["window_pct"], height=0.4, color=BLUE, label="Window pass")
    for y, (_, row) in zip(positions, table.iterrows(), strict=True):
        if np.isfinite(row["ratio"]):
            axes.text(row["window_pct"], y + 0.2, f"  {row['ratio']:.1f}x", va="center",
                      fontsize="small")
    axes.set_yticks(positions, [MODE_LABELS.get(m, m) for m in table["mode"]])
    axes.margins(x=0.15)  # room for the ratio labels right of the longest bar
    axes.set_xlabel("Captions carrying the mode (%)")
    axes.legend(frameon=False, loc="lower right")
    return figure


def accepted_with_rejected_window(table: pd.DataFrame) -> Figure:
    """Figure 3: overviews accepted whole that hold a rejected window, with exact intervals."""
    figure = _figure()
    axes = figure.add_subplot()
    positions = np.arange(len(table))
    axes.bar(positions, table["pct"], color=GREY,
             yerr=_interval_errors(table["pct"], table["ci_low"], table["ci_high"]), capsize=3)
    for x, (_, row) in enumerate(table.iterrows()):
        axes.text(x, 1, f"{row['with_rejected_window']}/{row['accepted_overviews']}",
                  ha="center", va="bottom", fontsize="x-small", color="white")
    if len(table):
        axes.axhline(table["pooled_pct"].iloc[0], linestyle="--", color="black", linewidth=1,
                     label="pooled")
        axes.legend(frameon=False)
    axes.set_xticks(positions, table["model"], rotation=30, ha="right")
    axes.set_ylabel("Accepted overviews with a rejected window (%)")
    return figure


def rejected_windows_per_caption(table: pd.DataFrame) -> Figure:
    """Figure 4: rejected windows per caption, observed against independent windows."""
    return _observed_against_expected(
        table["rejected_windows"], table["observed_pct"], table["expected_pct"],
        expected_label="independent windows", xlabel="Rejected windows in the caption",
        ylabel="Captions (%)",
    )


def correct_overview(table: pd.DataFrame) -> Figure:
    """Figure 5: correct-overview rate per model with Clopper-Pearson intervals (Table 5)."""
    figure = _figure()
    axes = figure.add_subplot()
    positions = np.arange(len(table))
    axes.errorbar(positions, table["correct_overview_pct"], fmt="o", color=BLUE, capsize=3,
                  yerr=_interval_errors(table["correct_overview_pct"],
                                        table["correct_overview_ci_low"],
                                        table["correct_overview_ci_high"]))
    axes.set_xticks(positions, table["model"], rotation=30, ha="right")
    axes.set_ylabel("Correct overview (%)")
    return figure


def mode_profiles(table: pd.DataFrame, models: Sequence[str] | None = None) -> Figure:
    """Figure 6: share of captions carrying each mode for the chosen models side by side."""
    chosen = table if models is None else table.set_index("model").loc[list(models)].reset_index()
    figure = _figure()
    axes = figure.add_subplot()
    width = 0.8 / max(len(chosen), 1)
    positions = np.arange(len(MODES))
    for offset, (_, row) in enumerate(chosen.iterrows()):
        values = [row[f"{mode}_pct"] for mode in MODES]
        axes.bar(positions + (offset - (len(chosen) - 1) / 2) * width, values, width=width,
                 label=row["model"])
    axes.set_xticks(positions, [MODE_LABELS[m] for m in MODES], rotation=30, ha="right")
    axes.set_ylabel("Captions carrying the mode (%)")
    axes.legend(frameon=False, fontsize="small")
    return figure


def mode_incidence_by_model(table: pd.DataFrame) -> Figure:
    """Figure 7: per-model incidence of each mode, one panel per mode, highest bar in red."""
    figure = _figure(10, 6)
    panels = figure.subplots(2, 3, sharey=False).ravel()
    positions = np.arange(len(table))
    for axes, mode in zip(panels, MODES, strict=True):
        values = table[f"{mode}_pct"]
        highest = int(np.nanargmax(values.to_numpy(float))) if values.notna().any() else -1
        colours = [RED if i == highest else GREY for i in range(len(table))]
        axes.bar(positions, values, color=colours, capsize=2,
                 yerr=_interval_errors(values, table[f"{mode}_ci_low"], table[f"{mode}_ci_high"]))
        axes.set_title(MODE_LABELS[mode], fontsize="medium")
        axes.set_xticks(positions, table["model"], rotation=45, ha="right", fontsize="x-small")
    panels[0].set_ylabel("Captions (%)")
    panels[3].set_ylabel("Captions (%)")
    return figure


def models_failing_per_clip(table: pd.DataFrame) -> Figure:
    """Figure 8: models failing each paired clip, against a binomial at the pooled rate."""
    return _observed_against_expected(
        table["models_failing"], table["clips_observed"], table["clips_expected"],
        expected_label="binomial at the pooled rate", xlabel="Models whose overview was rejected",
        ylabel="Paired clips",
    )


def _observed_against_expected(
    x: pd.Series, observed: pd.Series, expected: pd.Series, *, expected_label: str, xlabel: str,
    ylabel: str,
) -> Figure:
    """Bars of an observed distribution with the distribution a null model expects as a line."""
    figure = _figure()
    axes = figure.add_subplot()
    axes.bar(x, observed, color=GREY, label="observed")
    axes.plot(x, expected, "o-", color=BLUE, label=expected_label)
    axes.set_xticks(x)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.legend(frameon=False)
    return figure


def difficulty_penalty(table: pd.DataFrame) -> Figure:
    """Figure 9: penalty on difficult footage with bootstrap intervals; blue excludes zero."""
    names = [c[: -len("_penalty_pts")] for c in table.columns if c.endswith("_penalty_pts")]
    figure = _figure(4 * max(len(names), 1), 4)
    panels = np.atleast_1d(figure.subplots(1, max(len(names), 1), sharey=True))
    positions = np.arange(len(table))
    for axes, name in zip(panels, names, strict=False):
        for y, (_, row) in zip(positions, table.iterrows(), strict=True):
            colour = BLUE if row[f"{name}_excludes_zero"] else GREY
            errors = _interval_errors(pd.Series([row[f"{name}_penalty_pts"]]),
                                      pd.Series([row[f"{name}_ci_low"]]),
                                      pd.Series([row[f"{name}_ci_high"]]))
            axes.errorbar(row[f"{name}_penalty_pts"], y, xerr=errors, fmt="o", color=colour,
                          capsize=3)
        axes.axvline(0, color="black", linewidth=0.8)
        axes.set_title(f"{name} penalty (points)", fontsize="medium")
    panels[0].set_yticks(positions, table["model"])
    panels[0].invert_yaxis()
    return figure


def omission_vs_factual(table: pd.DataFrame) -> Figure:
    """Figure 10: omission rate against factual-error rate, one point per model, with r."""
    figure = _figure(5, 4.5)
    axes = figure.add_subplot()
    axes.scatter(table["factual_pct"], table["omission_pct"], color=BLUE)
    for _, row in table.iterrows():
        axes.annotate(row["model"], (row["factual_pct"], row["omission_pct"]),
                      textcoords="offset points", xytext=(4, 4), fontsize="small")
    r = table["pearson_r"].iloc[0] if len(table) else float("nan")
    axes.set_title(f"r = {r:.2f}" if np.isfinite(r) else "r undefined", fontsize="medium")
    axes.set_xlabel("Factual error (% of captions)")
    axes.set_ylabel("Important omission (% of captions)")
    return figure


#: Figure name -> (the table it draws, the function). Names are stable: exports use them.
FIGURES: dict[str, tuple[str, Callable[[pd.DataFrame], Figure]]] = {
    "figure1_intervention_by_threshold": ("intervention_rate", intervention_by_threshold),
    "figure2_mode_incidence_by_detector": ("mode_incidence", mode_incidence_by_detector),
    "figure3_accepted_with_rejected_window": ("accepted_with_rejected_window",
                                              accepted_with_rejected_window),
    "figure4_rejected_windows_per_caption": ("windows_rejected_per_caption",
                                             rejected_windows_per_caption),
    "figure5_correct_overview": ("correctness", correct_overview),
    "figure6_mode_profiles": ("mode_incidence_by_model", mode_profiles),
    "figure7_mode_incidence_by_model": ("mode_incidence_by_model", mode_incidence_by_model),
    "figure8_models_failing_per_clip": ("models_failing_per_clip", models_failing_per_clip),
    "figure9_difficulty_penalty": ("difficulty_penalty", difficulty_penalty),
    "figure10_omission_vs_factual": ("omission_vs_factual", omission_vs_factual),
}


def build_figures(tables: Mapping[str, pd.DataFrame]) -> dict[str, Figure]:
    """Return every figure of :data:`FIGURES` whose table is in ``tables``."""
    return {name: draw(tables[table]) for name, (table, draw) in FIGURES.items()
            if table in tables}


def save_figure(figure: Figure, path_without_suffix: str | Path) -> list[Path]:
    """Write ``figure`` as ``<path>.png`` and ``<path>.svg``; return the two paths.

    The files carry no creation date or software stamp, so the same figure gives the same bytes.
    """
    base = Path(path_without_suffix)
    base.parent.mkdir(parents=True, exist_ok=True)
    png, svg = base.with_name(base.name + ".png"), base.with_name(base.name + ".svg")
    figure.savefig(png, dpi=150, metadata={"Software": None})
    # Why the salt: SVG element ids are otherwise random per process.
    with rc_context({"svg.hashsalt": "redline"}):
        figure.savefig(svg, metadata={"Date": None, "Creator": None})
    return [png, svg]
