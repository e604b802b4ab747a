"""The annotator quality page: per annotator, how much they did and how good it was.

Read-side only. Definitions (also on the page and in docs/guides/researchers.md):

- **items done**: annotations the annotator submitted at least once (a submission undone does
  not count: annotation.progress.standing);
- **QC outcomes**: the reviewers' decisions on their work that stand: approved as is, amended
  (approved with the reviewer's corrections), returned; their shares of the decisions, and the
  mean amendment size (words the reviewer changed, overview and windows, as the amend's audit
  event recorded it: annotation.services.review.qc_edit_size);
- **active time per item**: the median active seconds of the items done;
- **agreement with others**: on captions that this annotator and at least one other submitted
  (double annotation), their overview verdict against each other annotator's: the share equal
  and Cohen's kappa over those pairs.

Small samples: no rate or agreement over fewer than
:data:`annotation.gold_agreement.MIN_ITEMS` items (the profile's minimum group); such a cell is
blank and the row's `notes` say why.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Exists, OuterRef

from annotation.agreement import cohen_kappa
from annotation.gold_agreement import MIN_ITEMS
from annotation.models import Annotation, AuditEvent, CorrectionPass, Membership, Study
from annotation.progress import COUNTED, DECISIONS, SUBMITTED_ONCE, standing
from annotation.work_log import People
from scoring.metrics.final import verdict_of


@dataclass
class QualityRow:
    """One annotator's row (rates None where too few items, `notes` saying why)."""

    person: str
    user_id: int
    items_done: int = 0
    approved: int = 0
    amended: int = 0
    returned: int = 0
    approved_rate: float | None = None
    amended_rate: float | None = None
    return_rate: float | None = None
    amendment_words: float | None = None
    active_seconds: float | None = None
    double_items: int = 0
    peer_agreement: float | None = None
    peer_kappa: float | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def decisions(self) -> int:
        return self.approved + self.amended + self.returned


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole >= MIN_ITEMS else None


def _amendment_words(after: dict[str, Any]) -> int:
    size = after.get("edit_size") or {}
    overview = (size.get("overview") or {}).get("words_changed") or 0
    return int(overview) + sum(int(w.get("words_changed") or 0) for w in size.get("windows") or [])


def annotator_quality(*, study: Study, people: People) -> list[QualityRow]:
    """Every annotator of the study (members with the role, and whoever holds annotations),
    sorted by how the reader sees them."""
    annotations = Annotation.objects.filter(caption__clip__study=study).order_by()
    events = AuditEvent.objects.filter(study=study, annotation__isnull=False).order_by()
    counted = standing(events.filter(action__in=COUNTED))
    ids = set(Membership.objects.filter(study=study, role=Membership.Role.ANNOTATOR).values_list("user_id", flat=True))
    ids |= set(annotations.values_list("annotator_id", flat=True).distinct())
    rows = {pk: QualityRow(person=people.of(pk), user_id=pk) for pk in ids}

    for pk, n in (counted.filter(action="submit").values_list("annotation__annotator_id")
                  .annotate(n=Count("annotation_id", distinct=True))):
        rows[pk].items_done = n
    amend_words: dict[int, list[int]] = defaultdict(list)
    decisions: dict[int, Counter[str]] = defaultdict(Counter)
    for pk, action, after in counted.filter(action__in=DECISIONS).values_list(
        "annotation__annotator_id", "action", "after"
    ):
        decisions[pk][action] += 1
        if action == "amend":
            amend_words[pk].append(_amendment_words(after or {}))
    for pk, counts in decisions.items():
        row = rows[pk]
        row.approved, row.amended, row.returned = counts["approve"], counts["amend"], counts["return"]
        row.approved_rate = _share(row.approved, row.decisions)
        row.amended_rate = _share(row.amended, row.decisions)
        row.return_rate = _share(row.returned, row.decisions)
        if amend_words[pk]:
            row.amendment_words = sum(amend_words[pk]) / len(amend_words[pk])

    submitted_once = Exists(counted.filter(action="submit", annotation_id=OuterRef("pk")))
    seconds: dict[int, list[float]] = defaultdict(list)
    for pk, value in annotations.filter(submitted_once).values_list("annotator_id", "active_seconds"):
        seconds[pk].append(value)
    for pk, values in seconds.items():
        rows[pk].active_seconds = float(statistics.median(values))

    _peer_agreement(study, rows)
    for row in rows.values():
        if row.decisions < MIN_ITEMS:
            row.notes.append(f"QC rates need {MIN_ITEMS} decisions ({row.decisions} so far)")
        if row.double_items < MIN_ITEMS:
            row.notes.append(f"agreement with others needs {MIN_ITEMS} double-annotated items "
                             f"({row.double_items} so far)")
    return sorted(rows.values(), key=lambda row: row.person)


def _peer_agreement(study: Study, rows: dict[int, QualityRow]) -> None:
    """Each annotator's overview verdicts against the other annotators' on the same captions."""
    verdicts: dict[int, list[tuple[int, str]]] = defaultdict(list)  # caption -> (annotator, verdict)
    for caption_id, annotator_id, verdict in (
        CorrectionPass.objects.filter(
            kind=CorrectionPass.Kind.ANNOTATOR,
            annotation__caption__clip__study=study,
            annotation__state__in=SUBMITTED_ONCE,
        ).values_list("annotation__caption_id", "annotation__annotator_id", "overview_verdict")
    ):
        verdicts[caption_id].append((annotator_id, verdict_of(verdict)))
    mine: dict[int, list[str]] = defaultdict(list)
    theirs: dict[int, list[str]] = defaultdict(list)
    items: Counter[int] = Counter()
    for group in verdicts.values():
        if len(group) < 2:
            continue
        for annotator_id, verdict in group:
            items[annotator_id] += 1
            for other_id, other in group:
                if other_id != annotator_id:
                    mine[annotator_id].append(verdict)
                    theirs[annotator_id].append(other)
    for pk, n in items.items():
        row = rows.get(pk)
        if row is None:
            continue
        row.double_items = n
        if n >= MIN_ITEMS:
            pairs = list(zip(mine[pk], theirs[pk], strict=True))
            row.peer_agreement = sum(1 for a, b in pairs if a == b) / len(pairs)
            row.peer_kappa = cohen_kappa(mine[pk], theirs[pk])


# The columns of the page, the API and the CSV, in order: (key, heading).
COLUMNS = (
    ("person", "annotator"),
    ("items_done", "items done"),
    ("approved", "approved as is"),
    ("amended", "amended"),
    ("returned", "returned"),
    ("approved_rate", "approved as is (share)"),
    ("amended_rate", "amended (share)"),
    ("return_rate", "returned (share)"),
    ("amendment_words", "mean amendment size (words)"),
    ("active_seconds", "active time per item (median s)"),
    ("double_items", "double-annotated items"),
    ("peer_agreement", "overview agreement with others"),
    ("peer_kappa", "overview kappa with others"),
)


def row_values(row: QualityRow) -> dict[str, Any]:
    values = {key: getattr(row, key) for key, _ in COLUMNS}
    values["notes"] = "; ".join(row.notes)
    return values

