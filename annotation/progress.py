"""How a study is going, for its admins: per annotator, QC reviewer and model, and agreement.

Read-side only. Counts by state come from the annotations as they are now; everything
that happened over time (submissions, QC decisions, returns, amendments) comes from the
audit trail, which keeps what the current state forgets (an item returned and then
approved was still returned once).

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

from django.db.models import Count, Exists, OuterRef

from annotation import workflow
from annotation.agreement import Agreement, agreement
from annotation.models import (
    Annotation,
    AuditEvent,
    Caption,
    CorrectionPass,
    Membership,
    Study,
    WindowCorrection,
)

STATES = [state for state, _ in Annotation.State.choices]
DECISIONS = ("approve", "amend", "return")
SUBMITTED_ONCE = frozenset({workflow.SUBMITTED, workflow.IN_REVIEW, workflow.APPROVED})


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


def _per_day(moments: Iterable[datetime]) -> list[tuple[date, int]]:
    return sorted(Counter(moment.date() for moment in moments).items())


def _median(values: Sequence[float]) -> float | None:
    return float(statistics.median(values)) if values else None


def _fill(
    row: Row,
    annotations: Sequence[Mapping[str, Any]],
    events: Sequence[Mapping[str, Any]],
    *,
    decider: bool = False,
) -> Row:
    """Fill `row` from its annotations and the audit events about them (by them, for reviewers)."""
    row.counts = dict(Counter(a["state"] for a in annotations))
    submits = [e for e in events if e["action"] == "submit"]
    decisions = [e for e in events if e["action"] in DECISIONS]
    done = decisions if decider else submits
    row.done = len(done)
    row.per_day = _per_day(e["at"] for e in done)
    row.decisions = len(decisions)
    row.returns = sum(1 for e in decisions if e["action"] == "return")
    row.approvals = sum(1 for e in decisions if e["action"] == "approve")
    row.amends = sum(1 for e in decisions if e["action"] == "amend")
    if decider:
        row.median_seconds = _median(_review_seconds(events))
    else:
        submitted = {e["annotation_id"] for e in submits}
        row.median_seconds = _median(
            [a["active_seconds"] for a in annotations if a["id"] in submitted]
        )
    return row


def _review_seconds(events: Sequence[Mapping[str, Any]]) -> list[float]:
    """Claim-to-decision times of one reviewer's events (ordered by time)."""
    claimed: dict[int, datetime] = {}
    seconds = []
    for event in events:
        if event["action"] == "claim":
            claimed[event["annotation_id"]] = event["at"]
        elif event["action"] in DECISIONS and event["annotation_id"] in claimed:
            seconds.append((event["at"] - claimed.pop(event["annotation_id"])).total_seconds())
    return seconds


def study_progress(*, study: Study, with_agreement: bool = True) -> StudyProgress:
    """The study's progress. Agreement is the one costly part on a large study (every unit
    of every double-annotated caption): without `with_agreement` its rows are left empty and
    the page asks for them separately (`agreement_on_double_annotations`)."""
    annotations = list(
        Annotation.objects.filter(caption__clip__study=study).values(
            "id",
            "state",
            "active_seconds",
            "caption_id",
            "annotator__username",
            "caption__model__name",
            "caption__model__alias",
        )
    )
    by_id = {a["id"]: a for a in annotations}
    events = list(
        AuditEvent.objects.filter(
            study=study, annotation__isnull=False, action__in=("submit", "claim", *DECISIONS)
        )
        .order_by("at", "pk")
        .values("pk", "annotation_id", "action", "at", "actor__username")
    )
    members: dict[str, set[str]] = defaultdict(set)
    for username, role in Membership.objects.filter(study=study).values_list(
        "user__username", "role"
    ):
        members[role].add(username)

    # Group once, so the page costs one pass over the rows, not one per person or model.
    annotations_of: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    annotations_of_model: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for a in annotations:
        annotations_of[a["annotator__username"]].append(a)
        annotations_of_model[a["caption__model__name"]].append(a)
    events_about: dict[int, list[Mapping[str, Any]]] = defaultdict(list)
    acted_by: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for e in events:
        events_about[e["annotation_id"]].append(e)
        if e["action"] != "submit" and e["actor__username"]:
            acted_by[e["actor__username"]].append(e)

    def about(
        chosen: list[Mapping[str, Any]],
    ) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
        """The annotations and the events about them, in time order."""
        theirs = [e for a in chosen for e in events_about.get(a["id"], ())]
        theirs.sort(key=lambda e: (e["at"], e["pk"]))
        return chosen, theirs

    annotators = []
    for name in sorted(members[Membership.Role.ANNOTATOR] | set(annotations_of)):
        mine, theirs = about(annotations_of.get(name, []))
        annotators.append(_fill(Row(label=name), mine, theirs))

    reviewer_names = members[Membership.Role.REVIEWER] | set(acted_by)
    reviewers = []
    held = Annotation.objects.filter(caption__clip__study=study, reviewer__isnull=False)
    held_by: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for annotation_id, username in held.values_list("id", "reviewer__username"):
        held_by[username].append(by_id[annotation_id])
    for name in sorted(reviewer_names):
        acted = acted_by.get(name, [])
        reviewers.append(_fill(Row(label=name), held_by[name], acted, decider=True))

    models = []
    for model in study.candidate_models.order_by("alias"):
        mine, theirs = about(annotations_of_model.get(model.name, []))
        models.append(_fill(Row(label=model.alias, detail=model.name), mine, theirs))

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
        annotators=annotators,
        reviewers=reviewers,
        models=models,
        agreement=rows,
        double_annotated=double,
        unassigned_captions=unassigned,
        totals=_fill(Row(label="all"), annotations, events),
    )


def double_annotated_captions(*, study: Study) -> int:
    """Captions with two or more annotations submitted (submitted, in review or approved)."""
    submitted = Annotation.objects.filter(caption__clip__study=study, state__in=SUBMITTED_ONCE)
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
    submitted = Annotation.objects.filter(caption__clip__study=study, state__in=SUBMITTED_ONCE)
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
