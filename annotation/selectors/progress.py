"""How a study is going, for its admins: per annotator, QC reviewer and model, and agreement.

Read-side only. Counts by state come from the annotations as they are now; everything
that happened over time (submissions, QC decisions, returns, amendments) comes from the
audit trail, which keeps what the current state forgets (an item returned and then
approved was still returned once). A submission, approval or amendment taken back with
undo is not counted (`standing`): the trail keeps both events, the counts neither.

Definitions (also shown on the page):
- throughput: submissions (annotators, models) or QC decisions (reviewers) per active
  day, an active day being a UTC date with at least one of them; the per-day series too;
- median active time: annotators and models, the median of the active seconds of the
  items submitted at least once; reviewers, the median time from claiming an item to
  deciding it (approve, amend or return);
- return rate: returns / QC decisions; QC amendment rate: amends / (approvals + amends);
- agreement: on captions with two or more annotations submitted (submitted, in review or
  approved), between the annotators' own passes. See `agreement_on_double_annotations`.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet, Subquery, Value, Window
from django.db.models.functions import Coalesce, Lag, TruncDate

from annotation.models import (
    Annotation,
    AuditEvent,
    Caption,
    CorrectionPass,
    Membership,
    Study,
    WindowCorrection,
)
from annotation.rules import workflow
from annotation.rules.agreement import Agreement, agreement
from annotation.selectors.counted import counted_annotations

STATES = [state for state, _ in Annotation.State.choices]
DECISIONS = ("approve", "amend", "return")
SUBMITTED_ONCE = frozenset({workflow.SUBMITTED, workflow.IN_REVIEW, workflow.APPROVED})
COUNTED = ("submit", *DECISIONS)


def standing(events: QuerySet[AuditEvent]) -> QuerySet[AuditEvent]:
    """The events that were not undone. An undo takes back the annotation's last decisive
    action, so a submission, approval or amendment was undone exactly when the next counted
    event on its annotation (a submission, a QC decision, or the undo of one of them) is an
    undo. (Undoing an overview lock changes none of these counts and is left out.)"""
    later = (
        AuditEvent.objects.filter(annotation_id=OuterRef("annotation_id"), pk__gt=OuterRef("pk"))
        .filter(Q(action__in=COUNTED) | Q(action="undo", after__undone__in=COUNTED))
        .order_by("pk")
        .values("action")[:1]
    )
    return events.annotate(next_counted=Coalesce(Subquery(later), Value(""))).exclude(next_counted="undo")


@dataclass
class Row:
    """One annotator, reviewer or model."""

    label: str
    detail: str = ""
    counts: dict[str, int] = field(default_factory=dict)  # current state -> annotations
    done: int = 0  # submissions (annotators, models) or QC decisions (reviewers)
    per_day: list[tuple[date, int]] = field(default_factory=list)
    median_seconds: float | None = None
    decisions: int = 0
    returns: int = 0
    approvals: int = 0
    amends: int = 0

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def throughput(self) -> float | None:
        """Per active day."""
        return self.done / len(self.per_day) if self.per_day else None

    @property
    def return_rate(self) -> float | None:
        return self.returns / self.decisions if self.decisions else None

    @property
    def amendment_rate(self) -> float | None:
        finals = self.approvals + self.amends
        return self.amends / finals if finals else None

    def state_counts(self) -> list[int]:
        """Counts in the order of STATES, for tables."""
        return [self.counts.get(state, 0) for state in STATES]


@dataclass
class AgreementRow:
    label: str
    result: Agreement


@dataclass
class StudyProgress:
    states: list[str]  # display labels, in the order of STATES
    annotators: list[Row]
    reviewers: list[Row]
    models: list[Row]
    agreement: list[AgreementRow]
    double_annotated: int
    unassigned_captions: int
    totals: Row


def _median(values: Sequence[float]) -> float | None:
    return float(statistics.median(values)) if values else None


class _Tally:
    """Rows by label, filled from grouped counts: `add_*` take one grouped row each."""

    def __init__(self) -> None:
        self.rows: dict[str, Row] = defaultdict(lambda: Row(label=""))
        self.days: dict[str, Counter[date]] = defaultdict(Counter)
        self.seconds: dict[str, list[float]] = defaultdict(list)

    def add_state(self, key: str, state: str, n: int) -> None:
        counts = self.rows[key].counts
        counts[state] = counts.get(state, 0) + n

    def add_done(self, key: str, day: date, n: int) -> None:
        self.rows[key].done += n
        self.days[key][day] += n

    def add_decision(self, key: str, action: str, n: int) -> None:
        row = self.rows[key]
        row.decisions += n
        row.returns += n if action == "return" else 0
        row.approvals += n if action == "approve" else 0
        row.amends += n if action == "amend" else 0

    def row(self, key: str, label: str, detail: str = "") -> Row:
        row = self.rows[key]
        row.label, row.detail = label, detail
        row.per_day = sorted(self.days[key].items())
        row.median_seconds = _median(self.seconds[key])
        return row


ALL = "\0all"  # the totals' key: no username or model name starts with a NUL character


def study_progress(*, study: Study, with_agreement: bool = True, names: bool = True) -> StudyProgress:
    """The study's progress, counted in the database: a few grouped queries whose answers
    are as long as the number of people, models and days, not of annotations.

    Agreement is the one costly part on a large study (every unit of every double-annotated
    caption): without `with_agreement` its rows are left empty and the page asks for them
    separately (`agreement_on_double_annotations`)."""
    # Gold verdicts and practice attempts are not the study's work (gold checks are, unseen).
    annotations = Annotation.objects.filter(caption__clip__study=study).exclude(
        purpose__in=[Annotation.Purpose.GOLD, Annotation.Purpose.PRACTICE]).order_by()
    events = AuditEvent.objects.filter(study=study, annotation__isnull=False).order_by()
    counted = standing(events.filter(action__in=COUNTED))
    annotators, models, reviewers = _Tally(), _Tally(), _Tally()

    for name, model, state, n in annotations.values_list(
        "annotator__username", "caption__model__name", "state"
    ).annotate(n=Count("id")):
        annotators.add_state(name, state, n)
        annotators.add_state(ALL, state, n)
        models.add_state(model, state, n)
    for name, state, n in (
        annotations.filter(reviewer__isnull=False)
        .values_list("reviewer__username", "state")
        .annotate(n=Count("id"))
    ):
        reviewers.add_state(name, state, n)

    # Submissions per day, by the annotation's annotator and model.
    for name, model, day, n in (
        counted.filter(action="submit")
        .values_list("annotation__annotator__username", "annotation__caption__model__name", TruncDate("at"))
        .annotate(n=Count("id"))
    ):
        annotators.add_done(name, day, n)
        annotators.add_done(ALL, day, n)
        models.add_done(model, day, n)
    # QC decisions about each annotator's and model's annotations (their return rates).
    for name, model, action, n in (
        counted.filter(action__in=DECISIONS)
        .values_list("annotation__annotator__username", "annotation__caption__model__name", "action")
        .annotate(n=Count("id"))
    ):
        annotators.add_decision(name, action, n)
        annotators.add_decision(ALL, action, n)
        models.add_decision(model, action, n)
    # Each reviewer's own decisions per day (and who claimed anything: a reviewer too).
    acted = set(
        events.filter(action="claim", actor__isnull=False).values_list("actor__username", flat=True).distinct()
    )
    for name, action, day, n in (
        counted.filter(action__in=DECISIONS, actor__isnull=False)
        .values_list("actor__username", "action", TruncDate("at"))
        .annotate(n=Count("id"))
    ):
        acted.add(name)
        reviewers.add_done(name, day, n)
        reviewers.add_decision(name, action, n)

    # Median active time of the items submitted at least once, per annotator and model.
    submitted_once = Exists(counted.filter(action="submit", annotation_id=OuterRef("pk")))
    for name, model, seconds in annotations.filter(submitted_once).values_list(
        "annotator__username", "caption__model__name", "active_seconds"
    ):
        annotators.seconds[name].append(seconds)
        annotators.seconds[ALL].append(seconds)
        models.seconds[model].append(seconds)
    # Claim to decision: a decision whose previous event by the same reviewer on the same
    # annotation is a claim (a claim claimed again counts from the later claim); a decision
    # undone is not one, so the decision taken after it counts from the claim.
    for name, decided, claimed in _claim_to_decision(standing(events.filter(action__in=("claim", *DECISIONS)))):
        reviewers.seconds[name].append((decided - claimed).total_seconds())

    members: dict[str, set[str]] = defaultdict(set)
    for username, role in Membership.objects.filter(study=study).values_list("user__username", "role"):
        members[role].add(username)
    annotator_names = (members[Membership.Role.ANNOTATOR] | set(annotators.rows)) - {ALL}
    reviewer_names = members[Membership.Role.REVIEWER] | acted

    if with_agreement:
        rows, double = agreement_on_double_annotations(study=study)
    else:
        rows, double = [], double_annotated_captions(study=study)
    unassigned = (
        Caption.objects.filter(clip__study=study)
        .exclude(Exists(Annotation.objects.filter(caption_id=OuterRef("pk"))))
        .count()
    )
    return StudyProgress(
        states=[str(label) for _, label in Annotation.State.choices],
        annotators=[annotators.row(name, name) for name in sorted(annotator_names)],
        reviewers=[reviewers.row(name, name) for name in sorted(reviewer_names)],
        models=[
            models.row(model.name, model.alias, model.name if names else "")
            for model in study.candidate_models.order_by("alias")
        ],
        agreement=rows,
        double_annotated=double,
        unassigned_captions=unassigned,
        totals=annotators.row(ALL, "all"),
    )


def _claim_to_decision(events) -> Iterable[tuple[str, datetime, datetime]]:
    """(reviewer, decided at, claimed at) of every decision that follows its reviewer's claim;
    `events` are the claims and the decisions to look at."""
    partition = {"partition_by": [F("actor_id"), F("annotation_id")], "order_by": [F("at").asc(), F("pk").asc()]}
    # Only the window condition may follow the annotation: a plain one would be applied before
    # LAG looks back. Claims that follow a claim are few; they are dropped here.
    after_a_claim = (
        events.filter(actor__isnull=False)
        .annotate(
            previous=Window(Lag("action"), **partition),
            previous_at=Window(Lag("at"), **partition),
        )
        .filter(previous="claim")
        .values_list("actor__username", "action", "at", "previous_at")
    )
    return [(name, at, claimed) for name, action, at, claimed in after_a_claim if action in DECISIONS]


def double_annotated_captions(*, study: Study) -> int:
    """Captions with two or more annotations submitted (submitted, in review or approved)."""
    # Agreement is between annotators' work: not gold verdicts, practice or gold checks, nor
    # anything on a gold item (a gold check beside its gold verdict is no double annotation).
    submitted = counted_annotations(Annotation.objects.filter(caption__clip__study=study, state__in=SUBMITTED_ONCE))
    return submitted.values("caption_id").annotate(n=Count("id")).filter(n__gte=2).count()


def agreement_on_double_annotations(*, study: Study) -> tuple[list[AgreementRow], int]:
    """Agreement between annotators' own passes on captions that two or more of them submitted.

    Units: the overview verdict (one per caption), each window's verdict, the segmentation
    verdict; and per failure mode, whether the annotator tagged it on the unit (overview and
    windows for unit-level modes, the segmentation judgement for caption-level ones).
    Kappa compares the first two annotations of each caption by assignment time (then by
    annotator name, for annotations assigned at the same instant), alpha all of them. The
    assignment time travels in study bundles, so a study gives the same kappa after an
    export and import, where database ids (creation order) are renumbered.
    Returns the rows and the number of double-annotated captions.
    """
    # Flat rows joined in the database: no list of ids travels back as query parameters
    # (a prefetch over thousands of windows is one OR per window on SQLite, past its limit).
    # Agreement is between annotators' work: not gold verdicts, practice or gold checks, nor
    # anything on a gold item (a gold check beside its gold verdict is no double annotation).
    submitted = counted_annotations(Annotation.objects.filter(caption__clip__study=study, state__in=SUBMITTED_ONCE))
    doubled_captions = (
        submitted.values("caption_id").annotate(annotations=Count("id")).filter(annotations__gte=2)
    )
    doubly_annotated = submitted.filter(caption_id__in=doubled_captions.values("caption_id"))
    passes = list(
        CorrectionPass.objects.filter(
            kind=CorrectionPass.Kind.ANNOTATOR, annotation__in=doubly_annotated
        )
        .order_by(
            "annotation__caption_id", "annotation__assigned_at", "annotation__annotator__username"
        )
        .values(
            "pk", "annotation__caption__clip__name", "annotation__caption__model__name",
            "overview_verdict", "overview_modes", "segmentation_verdict", "segmentation_modes",
        )
    )
    window_rows: dict[int, dict[int, Mapping[str, Any]]] = defaultdict(dict)
    for row in WindowCorrection.objects.filter(
        correction_pass__kind=CorrectionPass.Kind.ANNOTATOR,
        correction_pass__annotation__in=doubly_annotated,
    ).values("correction_pass_id", "window__index", "verdict", "modes"):
        window_rows[row["correction_pass_id"]][row["window__index"]] = row
    # Keyed by clip and model name (not caption id) so that units come in the same order in
    # every database holding the study.
    by_caption: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for correction in passes:
        key = (correction["annotation__caption__clip__name"],
               correction["annotation__caption__model__name"])
        by_caption[key].append(correction)
    doubled = {caption: group for caption, group in by_caption.items() if len(group) >= 2}

    overview: list[list[Any]] = []
    segmentation: list[list[Any]] = []
    windows: list[list[Any]] = []
    unit_modes: list[
        list[set[str] | None]
    ] = []  # per unit (overview, windows): each annotator's modes
    caption_modes: list[list[set[str] | None]] = []
    for _, group in sorted(doubled.items()):
        overview.append([c["overview_verdict"] or None for c in group])
        segmentation.append([c["segmentation_verdict"] or None for c in group])
        caption_modes.append(
            [set(c["segmentation_modes"]) if c["segmentation_verdict"] else None for c in group]
        )
        unit_modes.append(
            [set(c["overview_modes"]) if c["overview_verdict"] else None for c in group]
        )
        rows_by_pass = [window_rows.get(c["pk"], {}) for c in group]
        for index in sorted({i for rows in rows_by_pass for i in rows}):
            judged = [rows.get(index) for rows in rows_by_pass]
            judged = [row if row is not None and row["verdict"] else None for row in judged]
            windows.append([row["verdict"] if row else None for row in judged])
            unit_modes.append([set(row["modes"]) if row else None for row in judged])

    def tagged(units: list[list[set[str] | None]], key: str) -> list[list[bool | None]]:
        return [[None if modes is None else key in modes for modes in unit] for unit in units]

    results = [
        AgreementRow("Overview: accept / reject", agreement(overview)),
        AgreementRow("Windows: accept / reject", agreement(windows)),
        AgreementRow("Segmentation: accept / reject", agreement(segmentation)),
    ]
    for mode in study.taxonomy.modes.order_by("position"):
        units = caption_modes if mode.level == "caption" else unit_modes
        results.append(AgreementRow(f"Mode: {mode.name}", agreement(tagged(units, mode.key))))
    return results, len(doubled)
