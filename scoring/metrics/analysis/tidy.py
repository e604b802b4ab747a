"""The tidy input of the analysis: one table of captions and one of windows, final verdicts only.

Everything in :mod:`scoring.metrics.analysis` is a function of these two pandas DataFrames. They are
built from the database by the export (one row per caption that has a QC-approved final
verdict); the analysis never sees Django. Column kinds:

- *text*: a non-empty string (no missing values);
- *verdict*: the string ``'accept'`` or ``'reject'``;
- *flag*: a boolean column (dtype ``bool``, no missing values);
- *count*: a non-negative whole number (integer dtype, or floats that are all whole);
- *share*: a float in [0, 1], no missing values;
- *number*: a float; missing (NaN) allowed;
- *label*: a clip property; a string, where ``''``, missing and ``'unclear'`` all mean unknown;
- *position*: a whole number >= 1; missing allowed (unknown).

Passes: ``annotator`` is what the annotator submitted; ``final`` is the QC-approved verdict
(the annotator's pass plus the QC reviewer's amendments). Both are kept because the analyses
compare them. Text measures (words changed, similarity, lengths) are always of the *final*
corrected text against the model's original (an accepted unit has its original text: 0 words
changed, similarity 1, equal lengths).

Failure modes are one boolean column per mode key (not a set per cell): boolean columns are
what vectorised code wants, and a missing column is caught by :func:`validate_tidy`.
Overviews and windows carry the five *unit* modes (``UNIT_MODES``). Segmentation is judged once
per caption (PROTOCOL.md section 2), so it has no per-unit columns: a caption carries the
segmentation mode in a pass exactly when its segmentation judgement in that pass is
``'reject'``. Modes are recorded only on rejected units; an accepted unit with a mode is refused.

``captions`` -- one row per caption with a final verdict; ``(clip, model)`` is unique:

=====================================  =======  ===============================================
column                                 kind     meaning
=====================================  =======  ===============================================
clip                                   text     clip identifier
model                                  text     candidate model name, as shown in tables
annotator                              text     who made the annotator pass
reviewer                               text     the QC reviewer who approved or amended it
overview_annotator_verdict             verdict  the annotator's overview verdict
overview_final_verdict                 verdict  the final (QC-approved) overview verdict
overview_annotator_<mode>              flag     the annotator tagged <mode> on the overview
overview_final_<mode>                  flag     the final overview carries <mode>
overview_words_changed                 count    words changed, final overview vs original
overview_char_similarity               share    character similarity, final vs original
overview_original_chars                count    characters of the original overview
overview_corrected_chars               count    characters of the final overview
segmentation_annotator_verdict         verdict  the annotator's segmentation judgement
segmentation_final_verdict             verdict  the final segmentation judgement
content_type, camera_platform,         label    clip properties (constant within a clip)
scene_complexity, shot_scale,
motion_intensity
manipulated                            flag     the clip is a manipulated control
input_tokens_per_second                number   input tokens per second of video (1st attempt)
retried                                flag     re-requested after failing the schema
re_encoded                             flag     sent as a different file
invalid_kept                           flag     kept although it never passed the schema
score_<name>                           number   an automatic score of the overview (any number
                                                of these; e.g. score_bleu4, score_cider,
                                                score_llmfacts_f1, score_cospar, score_cossen,
                                                score_hm_cf, score_length)
identifier, route, provider            text     optional: model identifier, route, and the
                                                serving provider of this caption (Table 14)
queue_position                         position optional: where the caption sat in its
                                                annotator's queue (1 = first)
exposure                               position optional: 1 when the caption was the first of
                                                its clip that its annotator met, 2 the second...
=====================================  =======  ===============================================

``queue_position`` and ``exposure`` are those of the annotation whose verdict is final. The
database export always writes them; they are missing for annotations assigned before
assignment designs existed, and tables made elsewhere may leave the columns out (the
rejection-by-exposure table is then not computable).

``<mode>`` ranges over ``UNIT_MODES`` = factual, omission, camera, inference, temporal.

``windows`` -- one row per window of those captions; ``(clip, model, index)`` is unique and
``(clip, model)`` must be a row of ``captions``:

=====================================  =======  ===============================================
column                                 kind     meaning
=====================================  =======  ===============================================
clip, model                            text     the caption the window belongs to
index                                  count    position of the window in the timeline
annotator_verdict, final_verdict       verdict  the window's verdict in each pass
annotator_<mode>, final_<mode>         flag     the window carries <mode> in that pass
<field>_original_chars                 count    characters of the original field text
<field>_corrected_chars                count    characters of the final field text
<field>_original_words                 count    words of the original field text
<field>_corrected_words                count    words of the final field text
<field>_words_changed                  count    words changed, final vs original
<field>_char_similarity                share    character similarity, final vs original
<field>_changed                        flag     the final text of the field differs
=====================================  =======  ===============================================

``<field>`` ranges over ``FIELDS`` = scene, shot. A window whose final verdict is ``'accept'``
must have both fields unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

MODES: tuple[str, ...] = ("factual", "omission", "camera", "segmentation", "inference", "temporal")
#: Modes tagged on a unit (an overview or a window); segmentation is caption-level only.
UNIT_MODES: tuple[str, ...] = ("factual", "omission", "camera", "inference", "temporal")
PASSES: tuple[str, ...] = ("annotator", "final")
FIELDS: tuple[str, ...] = ("scene", "shot")
PROPERTIES: tuple[str, ...] = (
    "content_type",
    "camera_platform",
    "scene_complexity",
    "shot_scale",
    "motion_intensity",
)
VERDICTS: frozenset[str] = frozenset({"accept", "reject"})
#: Property values that mean "not known"; such captions are left out of property analyses.
UNKNOWN_LABELS: frozenset[str] = frozenset({"", "unclear"})
SCORE_PREFIX = "score_"

Pass = Literal["annotator", "final"]
Kind = Literal["text", "verdict", "flag", "count", "share", "number", "label", "position"]


@dataclass(frozen=True)
class Column:
    """One column of the tidy schema."""

    name: str
    kind: Kind


def _caption_columns() -> tuple[Column, ...]:
    columns = [Column(name, "text") for name in ("clip", "model", "annotator", "reviewer")]
    for pass_ in PASSES:
        columns.append(Column(f"overview_{pass_}_verdict", "verdict"))
        columns += [Column(f"overview_{pass_}_{mode}", "flag") for mode in UNIT_MODES]
    columns += [
        Column("overview_words_changed", "count"),
        Column("overview_char_similarity", "share"),
        Column("overview_original_chars", "count"),
        Column("overview_corrected_chars", "count"),
    ]
    columns += [Column(f"segmentation_{pass_}_verdict", "verdict") for pass_ in PASSES]
    columns += [Column(name, "label") for name in PROPERTIES]
    columns += [Column("manipulated", "flag"), Column("input_tokens_per_second", "number")]
    columns += [Column(name, "flag") for name in ("retried", "re_encoded", "invalid_kept")]
    return tuple(columns)


def _window_columns() -> tuple[Column, ...]:
    columns = [Column("clip", "text"), Column("model", "text"), Column("index", "count")]
    for pass_ in PASSES:
        columns.append(Column(f"{pass_}_verdict", "verdict"))
        columns += [Column(f"{pass_}_{mode}", "flag") for mode in UNIT_MODES]
    for field in FIELDS:
        columns += [
            Column(f"{field}_original_chars", "count"),
            Column(f"{field}_corrected_chars", "count"),
            Column(f"{field}_original_words", "count"),
            Column(f"{field}_corrected_words", "count"),
            Column(f"{field}_words_changed", "count"),
            Column(f"{field}_char_similarity", "share"),
            Column(f"{field}_changed", "flag"),
        ]
    return tuple(columns)


CAPTION_COLUMNS: tuple[Column, ...] = _caption_columns()
WINDOW_COLUMNS: tuple[Column, ...] = _window_columns()
#: Optional caption columns: generation details (used by the generation table when present)
#: and where the annotator met the caption (used by the rejection-by-exposure table).
OPTIONAL_CAPTION_COLUMNS: tuple[Column, ...] = (
    Column("identifier", "text"),
    Column("route", "text"),
    Column("provider", "text"),
    Column("queue_position", "position"),
    Column("exposure", "position"),
)
#: The exposure columns: where the annotator met the caption (see the module docstring).
EXPOSURE_COLUMNS: tuple[str, ...] = ("queue_position", "exposure")


class TidyError(ValueError):
    """The tidy tables do not follow the schema; the message lists every problem found."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("tidy tables do not follow the schema:\n- " + "\n- ".join(self.problems))


def score_columns(captions: pd.DataFrame) -> list[str]:
    """Return the ``score_*`` columns of ``captions``, in table order."""
    return [name for name in captions.columns if str(name).startswith(SCORE_PREFIX)]


def _column_problem(frame: pd.DataFrame, column: Column) -> str | None:
    """Return what is wrong with one column of ``frame`` (None when it is fine)."""
    values = frame[column.name]
    kind = column.kind
    if kind == "text":
        bad = values.isna() | (values.astype("string").str.len() == 0)
        return _first_bad(values, bad, "must be a non-empty string")
    if kind == "verdict":
        bad = ~values.isin(VERDICTS)
        return _first_bad(values, bad, "must be 'accept' or 'reject'")
    if kind == "flag":
        if not pd.api.types.is_bool_dtype(values) or values.isna().any():
            return f"must be a boolean column without missing values (dtype is {values.dtype})"
        return None
    if kind == "label":
        if values.isna().all():
            return None  # an all-missing column reads as floats; every label is unknown
        if not (pd.api.types.is_string_dtype(values) or pd.api.types.is_object_dtype(values)):
            return f"must hold strings (dtype is {values.dtype})"
        return None
    if kind == "position" and values.isna().all():
        return None  # nobody knows where the captions were met (assigned before designs)
    if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        return f"must be numeric (dtype is {values.dtype})"
    if kind == "number":
        return None
    if kind == "position":
        numbers = values.to_numpy(dtype=float, na_value=np.nan)
        bad = ~np.isnan(numbers) & ((numbers < 1) | (numbers != np.floor(numbers)))
        return _first_bad(values, pd.Series(bad, index=values.index),
                          "must be a whole number >= 1 or missing")
    numbers = values.to_numpy(dtype=float)
    if kind == "count":
        bad = np.isnan(numbers) | (numbers < 0) | (numbers != np.floor(numbers))
        return _first_bad(values, pd.Series(bad, index=values.index), "must be a whole number >= 0")
    bad = np.isnan(numbers) | (numbers < 0) | (numbers > 1)
    return _first_bad(values, pd.Series(bad, index=values.index), "must be a number in [0, 1]")


def _first_bad(values: pd.Series, bad: pd.Series, rule: str) -> str | None:
    """Describe the first offending value (and how many there are), or None."""
    count = int(bad.sum())
    if count == 0:
        return None
    row = bad.to_numpy().nonzero()[0][0]
    return f"{rule}; {count} row(s) do not, e.g. row {row}: {values.iloc[row]!r}"


def _schema_problems(frame: pd.DataFrame, columns: Iterable[Column], table: str) -> list[str]:
    """Return missing columns and bad values of ``frame`` against ``columns``."""
    columns = list(columns)
    missing = [column.name for column in columns if column.name not in frame.columns]
    problems = [f"{table}: missing column(s): {', '.join(missing)}"] if missing else []
    for column in columns:
        if column.name in frame.columns:
            problem = _column_problem(frame, column)
            if problem:
                problems.append(f"{table}.{column.name} {problem}")
    return problems


def _caption_rules(captions: pd.DataFrame) -> list[str]:
    """Cross-column rules of the captions table (only called on schema-clean tables)."""
    problems: list[str] = []
    duplicated = captions.duplicated(["clip", "model"])
    if duplicated.any():
        row = captions.loc[duplicated, ["clip", "model"]].iloc[0].tolist()
        problems.append(f"captions: (clip, model) must be unique; {int(duplicated.sum())} "
                        f"duplicate(s), e.g. {row}")
    for pass_ in PASSES:
        accepted = captions[f"overview_{pass_}_verdict"] == "accept"
        tagged = captions[[f"overview_{pass_}_{mode}" for mode in UNIT_MODES]].any(axis=1)
        if (accepted & tagged).any():
            problems.append(f"captions: {int((accepted & tagged).sum())} overview(s) accepted in "
                            f"the {pass_} pass carry a failure mode")
    accepted = captions["overview_final_verdict"] == "accept"
    edited = captions["overview_words_changed"] > 0
    if (accepted & edited).any():
        problems.append(f"captions: {int((accepted & edited).sum())} overview(s) with a final "
                        "'accept' have words changed")
    for name in (*PROPERTIES, "manipulated"):
        if name in captions.columns:
            varying = captions.groupby("clip")[name].nunique(dropna=False) > 1
            if varying.any():
                problems.append(f"captions.{name} must be constant within a clip; it varies on "
                                f"{int(varying.sum())} clip(s), e.g. {varying[varying].index[0]!r}")
    return problems


def _window_rules(captions: pd.DataFrame, windows: pd.DataFrame) -> list[str]:
    """Cross-table rules of the windows table (only called on schema-clean tables)."""
    problems: list[str] = []
    duplicated = windows.duplicated(["clip", "model", "index"])
    if duplicated.any():
        problems.append(f"windows: (clip, model, index) must be unique; "
                        f"{int(duplicated.sum())} duplicate(s)")
    known = pd.MultiIndex.from_frame(captions[["clip", "model"]])
    orphan = ~pd.MultiIndex.from_frame(windows[["clip", "model"]]).isin(known)
    if orphan.any():
        row = windows.loc[orphan, ["clip", "model"]].iloc[0].tolist()
        problems.append(f"windows: {int(orphan.sum())} window(s) belong to no caption row, "
                        f"e.g. {row}")
    for pass_ in PASSES:
        accepted = windows[f"{pass_}_verdict"] == "accept"
        tagged = windows[[f"{pass_}_{mode}" for mode in UNIT_MODES]].any(axis=1)
        if (accepted & tagged).any():
            problems.append(f"windows: {int((accepted & tagged).sum())} window(s) accepted in the "
                            f"{pass_} pass carry a failure mode")
    changed = windows[[f"{field}_changed" for field in FIELDS]].any(axis=1)
    accepted = windows["final_verdict"] == "accept"
    if (accepted & changed).any():
        problems.append(f"windows: {int((accepted & changed).sum())} window(s) with a final "
                        "'accept' have a changed field")
    return problems


def validate_tidy(captions: pd.DataFrame, windows: pd.DataFrame) -> None:
    """Raise :class:`TidyError` naming every missing column and bad value; return None if clean.

    Checks each column's kind (see the module docstring), then the cross-column rules: unique
    keys, windows that belong to a caption row, no modes on accepted units, no edits on
    accepted overviews or windows, and clip properties constant within a clip.
    """
    present_optional = [c for c in OPTIONAL_CAPTION_COLUMNS if c.name in captions.columns]
    scores = [Column(name, "number") for name in score_columns(captions)]
    problems = _schema_problems(captions, (*CAPTION_COLUMNS, *present_optional, *scores),
                                "captions")
    problems += _schema_problems(windows, WINDOW_COLUMNS, "windows")
    if not problems:
        problems = _caption_rules(captions) + _window_rules(captions, windows)
    if problems:
        raise TidyError(problems)


# --- Derived views shared by the table functions -------------------------------------------------


def paired_clips(captions: pd.DataFrame) -> pd.Index:
    """Return the clips that have a final verdict from every model present in ``captions``."""
    n_models = captions["model"].nunique()
    per_clip = captions.groupby("clip")["model"].nunique()
    return per_clip.index[per_clip == n_models]


def paired_subset(
    captions: pd.DataFrame, windows: pd.DataFrame | None = None
) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """Return captions (and their windows) restricted to :func:`paired_clips`."""
    kept = captions[captions["clip"].isin(paired_clips(captions))]
    return kept, (None if windows is None else windows_of(kept, windows))


def windows_of(captions: pd.DataFrame, windows: pd.DataFrame) -> pd.DataFrame:
    """Return the rows of ``windows`` whose caption is a row of ``captions``."""
    known = pd.MultiIndex.from_frame(captions[["clip", "model"]])
    return windows[pd.MultiIndex.from_frame(windows[["clip", "model"]]).isin(known)]


def caption_positions(captions: pd.DataFrame, windows: pd.DataFrame) -> np.ndarray:
    """Return, for each window, the row position of its caption in ``captions`` (-1 if none)."""
    known = pd.MultiIndex.from_frame(captions[["clip", "model"]])
    return np.asarray(known.get_indexer(pd.MultiIndex.from_frame(windows[["clip", "model"]])))


def any_by_caption(flags: np.ndarray, positions: np.ndarray, n_captions: int) -> np.ndarray:
    """Return, per caption, whether any of its windows has ``flags`` set (windows at -1 ignored)."""
    hit = positions[np.asarray(flags, dtype=bool) & (positions >= 0)]
    return np.bincount(hit, minlength=n_captions) > 0


def count_by_caption(flags: np.ndarray, positions: np.ndarray, n_captions: int) -> np.ndarray:
    """Return, per caption, how many of its windows have ``flags`` set."""
    hit = positions[np.asarray(flags, dtype=bool) & (positions >= 0)]
    return np.bincount(hit, minlength=n_captions)


def window_similarity(windows: pd.DataFrame) -> np.ndarray:
    """Return each window's character similarity, scene and shot aligned field by field.

    The fields' similarities are combined weighted by their characters on both sides,
    ``1 - sum(indel_f) / sum(original_f + corrected_f)`` where ``indel_f = (1 - s_f) * (o_f +
    c_f)``: the similarity of the window text when each field is aligned with itself (the
    per-field measures are all the schema keeps). A window with no text at all counts as 1.
    """
    sizes = [windows[f"{f}_original_chars"].to_numpy(float)
             + windows[f"{f}_corrected_chars"].to_numpy(float) for f in FIELDS]
    indel = sum((1 - windows[f"{f}_char_similarity"].to_numpy(float)) * size
                for f, size in zip(FIELDS, sizes, strict=True))
    total = sum(sizes)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, 1 - indel / np.where(total > 0, total, 1), 1.0)


def window_repairs(windows: pd.DataFrame) -> pd.DataFrame:
    """Return one row per *window repair*: a changed scene or shot field of a finally rejected
    window (the unit of Tables 6 and 9, and of Table 5's critical).

    Columns: ``window`` (row position in ``windows``), ``field`` and ``char_similarity`` (that
    field's final text against its original). Rows are ordered by field, then window.
    """
    rejected = windows["final_verdict"].eq("reject").to_numpy()
    parts = []
    for field in FIELDS:
        keep = np.flatnonzero(rejected & windows[f"{field}_changed"].to_numpy(bool))
        parts.append(pd.DataFrame({
            "window": keep, "field": field,
            "char_similarity": windows[f"{field}_char_similarity"].to_numpy(float)[keep]}))
    return pd.concat(parts, ignore_index=True)


def near_total_windows(windows: pd.DataFrame, cut: float) -> np.ndarray:
    """Return, per window, whether it has a near-total repair: a repair (see
    :func:`window_repairs`) whose field similarity is below ``cut``. A shot rewritten entirely
    makes its window near-total even when the scene was untouched."""
    repairs = window_repairs(windows)
    hit = repairs.loc[repairs["char_similarity"] < cut, "window"].to_numpy(int)
    return np.bincount(hit, minlength=len(windows)) > 0


def known_label(values: pd.Series) -> pd.Series:
    """Return True where a property label is known (not missing, empty or 'unclear')."""
    text = values.astype("string").str.strip().str.lower()
    return text.notna() & ~text.isin(UNKNOWN_LABELS)


def model_order(captions: pd.DataFrame) -> list[str]:
    """Return the models ordered as the paper orders its tables.

    Highest correct-overview rate on the paired subset first; ties (and studies without a
    paired subset) fall back to the rate on all captions, then to the name.
    """
    correct = captions["overview_final_verdict"] == "accept"
    overall = correct.groupby(captions["model"]).mean()
    paired = captions["clip"].isin(paired_clips(captions))
    on_paired = correct[paired].groupby(captions.loc[paired, "model"]).mean()
    on_paired = on_paired.reindex(overall.index).fillna(-1.0)
    keys = pd.DataFrame({"paired": on_paired, "overall": overall, "name": overall.index})
    keys = keys.sort_values(["paired", "overall", "name"], ascending=[False, False, True])
    return [str(name) for name in keys["name"]]
