"""Scores from elsewhere, attached to a study's captions: the import service, and what the
profile reads of them (Table 1 rows and leaderboard judges).

The file format is :mod:`annotation.interchange.formats.scores`'s. An import is all-or-nothing: every
problem is reported (``line N, field: reason``) and nothing is stored when there is one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
from django.db import transaction
from django.utils import timezone

from annotation.errors import ImportRefused
from annotation.interchange.formats.scores import NO_DEFAULTS, Defaults, ExternalLine, parse_scores
from annotation.models import Caption, Study
from annotation.services.study_state import Write, study_require
from scoring.models import ExternalScore

#: Column prefixes of an imported score in the tidy captions table: a control of Table 1
#: (``score_external_<metric>``) or, with the clip's imported references, an imported row
#: (``score_imported_external_<metric>``). Redline's own scores never start so (their columns are
#: ``score_<set>_<metric>[_<judge>]`` of the registry's metrics), so an imported row stands beside
#: Redline's row of a metric, never instead of it.
CONTROL_PREFIX = "score_external_"
IMPORTED_PREFIX = "score_imported_external_"
# Rows deleted or written per query.
DELETE_BATCH = 5_000


@dataclass(frozen=True)
class ScoresImportReport:
    stored: int
    metrics: list[str]
    replaced: int = 0

    @property
    def sentence(self) -> str:
        """What the import did, for a person: ``Stored 12 score(s) of bleu4_x, replacing 12.``"""
        replacing = f", replacing {self.replaced}" if self.replaced else ""
        return f"Stored {self.stored} score(s) of {', '.join(self.metrics)}{replacing}."


def builtin_names() -> frozenset[str]:
    """Names an imported metric may not take: Redline's own metrics (Table 1 rows) and judges
    (leaderboard columns)."""
    from scoring.metrics.embeddings import JUDGES
    from scoring.metrics.registry import METRICS

    return frozenset(METRICS) | frozenset(JUDGES)


def external_scores_import(*, study: Study, data: bytes, defaults: Defaults = NO_DEFAULTS,
                           replace: bool = False) -> ScoresImportReport:
    """Store the scores of a JSON Lines file for the study's captions, or refuse it whole.

    A caption has at most one score of a metric from a source. Refused (:class:`ImportRefused`,
    every problem named by line) for: bad lines (see
    :func:`annotation.interchange.formats.scores.parse_scores`), a clip or model the study has no caption
    for, a metric named as one of Redline's own metrics or judges, a metric that another source
    scored in this study (or in this file), a score that a caption already has of the metric and
    source unless ``replace`` (then the stored one, whatever its version, is replaced and
    counted), and a metric given another direction or reference set than the study keeps for it.
    """
    study_require(study, Write.SCORING)
    lines, problems = parse_scores(data, defaults)
    with transaction.atomic():
        # Two imports at once would each miss the other's scores: one study's imports take turns.
        Study.objects.select_for_update().only("pk").get(pk=study.pk)
        return _import_checked(study, lines, problems, replace=replace)


def _import_checked(study: Study, lines: list[ExternalLine], problems: list[str], *,
                    replace: bool) -> ScoresImportReport:
    captions = {(c.clip.name, c.model.name): c for c in Caption.objects.filter(
        clip__study=study).select_related("clip", "model")}
    # (caption, metric, source) -> its stored scores, oldest first: (pk, version, direction,
    # references). Before one score per caption, metric and source, versions could pile up.
    stored: dict[tuple[int, str, str], list[tuple[int, str, str, str]]] = {}
    for pk, caption_id, metric, source, version, direction, references in ExternalScore.objects.filter(
            study=study).order_by("imported_at", "pk").values_list(
            "pk", "caption_id", "metric", "source", "version", "direction", "references"):
        stored.setdefault((caption_id, metric, source), []).append(
            (pk, version, direction, references))
    reserved = builtin_names()
    named: set[str] = set()
    chosen = []
    for item in lines:
        caption = captions.get((item.clip, item.model))
        if caption is None:
            clips = {clip for clip, _ in captions}
            field = "model" if item.clip in clips else "clip"
            problems.append(f"line {item.line}, {field}: the study has no caption of model "
                            f"{item.model!r} for clip {item.clip!r}")
            continue
        if item.metric in reserved:
            if item.metric not in named:
                named.add(item.metric)
                problems.append(
                    f"line {item.line}, metric: {item.metric!r} is the name of one of Redline's own "
                    f"metrics or judges, whose Table 1 and leaderboard rows an imported score may "
                    f"not take; name it for what computed it (e.g. {item.metric}_"
                    f"{_slug(item.source)}). Every line of this metric is refused.")
            continue
        chosen.append((item, caption))
    # Which source each metric is from: the stored scores that stay, then the file's first line.
    replaced = {key: stored[key] for key in ((caption.pk, item.metric, item.source)
                                             for item, caption in chosen) if key in stored}
    kept = {key: value for key, value in stored.items() if not (replace and key in replaced)}
    owner = {metric: source for (_, metric, source) in kept}
    kinds = {metric: (scores[-1][2], scores[-1][3]) for (_, metric, _), scores in kept.items()}
    rows = []
    for item, caption in chosen:
        key = (caption.pk, item.metric, item.source)
        source = owner.setdefault(item.metric, item.source)
        if source != item.source:
            problems.append(f"line {item.line}, source: metric {item.metric!r} in this study is "
                            f"scored by source {source!r}; a score from {item.source!r} needs a "
                            f"name of its own (e.g. {item.metric}_{_slug(item.source)})")
            continue
        if key in replaced and not replace:
            version = replaced[key][-1][1]
            problems.append(f"line {item.line}: clip {item.clip!r}, model {item.model!r} already "
                            f"has a score of metric {item.metric!r} from source {item.source!r} "
                            f"(version {version!r}); import with replace to replace it")
            continue
        kind = (item.direction, item.references)
        if kinds.setdefault(item.metric, kind) != kind:
            direction, references = kinds[item.metric]
            problems.append(f"line {item.line}, direction: metric {item.metric!r} is "
                            f"{direction} is better with references {references} in this study")
            continue
        rows.append(ExternalScore(study=study, caption=caption, metric=item.metric,
                                  direction=item.direction, version=item.version,
                                  source=item.source, references=item.references,
                                  value=item.value, imported_at=timezone.now()))
    if problems:
        raise ImportRefused(problems)
    if not rows:
        raise ImportRefused(["the file holds no score"])
    gone = [pk for scores in replaced.values() for pk, *_ in scores] if replace else []
    for start in range(0, len(gone), DELETE_BATCH):  # SQLite caps the parameters of a query
        ExternalScore.objects.filter(pk__in=gone[start:start + DELETE_BATCH]).delete()
    ExternalScore.objects.bulk_create(rows, batch_size=DELETE_BATCH)
    return ScoresImportReport(stored=len(rows), metrics=sorted({r.metric for r in rows}),
                              replaced=len(gone))


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "source"


def external_column(metric: str, references: str) -> str:
    """The tidy captions column of an imported metric."""
    return (IMPORTED_PREFIX if references == "imported" else CONTROL_PREFIX) + metric


def external_columns(study: Study, caption_ids: Sequence[int]) -> dict[int, dict[str, float]]:
    """``{caption id: {column: value}}`` of the study's imported scores; the newest import of a
    caption and metric wins (several versions or sources: the newest)."""
    out: dict[int, dict[str, float]] = {}
    for caption_id, metric, references, value in ExternalScore.objects.filter(
            study=study, caption_id__in=list(caption_ids)).order_by(
            "imported_at", "pk").values_list("caption_id", "metric", "references", "value"):
        out.setdefault(caption_id, {})[external_column(metric, references)] = value
    return out


def lower_is_better(study: Study) -> list[str]:
    """The tidy columns of imported metrics for which lower is better (Table 1 orients them)."""
    return sorted({external_column(metric, references) for metric, references in
                   ExternalScore.objects.filter(study=study, direction="lower").values_list(
                       "metric", "references").distinct()})


def external_judges(study: Study, metrics: Sequence[str]) -> tuple[pd.DataFrame, list[str]]:
    """Imported metrics as leaderboard judges: (rows clip, model, judge, value; the judges for
    which lower is better). The judge is named after the metric; the newest value wins."""
    rows = ExternalScore.objects.filter(study=study, metric__in=list(metrics)).order_by(
        "imported_at", "pk").values_list("caption__clip__name", "caption__model__name", "metric",
                                         "value", "direction")
    values: dict[tuple[str, str, str], float] = {}
    lower = set()
    for clip, model, metric, value, direction in rows:
        values[(clip, model, metric)] = value
        if direction == "lower":
            lower.add(metric)
    missing = sorted(set(metrics) - {metric for _, _, metric in values})
    if missing:
        raise ImportRefused([f"no imported scores of metric {name!r} in this study"
                             for name in missing])
    frame = pd.DataFrame([{"clip": c, "model": m, "judge": j, "value": v}
                          for (c, m, j), v in values.items()],
                         columns=["clip", "model", "judge", "value"])
    return frame, sorted(lower)
