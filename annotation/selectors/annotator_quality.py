"""The annotator quality page: per annotator, how much they did and how good it was.

Read-side only. Definitions (also on the page and in docs/guides/researchers.md):

- **items done**: real work (purpose ``work``) the annotator submitted at least once (a
  submission undone does not count: annotation.selectors.progress.standing); **gold checks done**: the
  hidden gold items of their queue (purpose ``gold_check``) submitted;
- **practice**: their qualification (passed, failed, practising, not started), its attempts and
  the last attempt's overview agreement with the gold verdicts (annotation.rules.gold);
- **gold agreement**: over their submitted gold checks, their own pass (before any QC
  amendment) against the gold verdict of the item: overview kappa and agreement, failure-mode F1,
  window verdict agreement, words between their corrected overview and the gold one, and the
  edit-size difference (annotation.rules.gold_agreement); **recent gold accuracy**: the share of their
  latest :data:`~annotation.rules.gold_agreement.RECENT_CHECKS` gold checks whose overview verdict
  equals the gold one: the dashboard warns (drift) when it falls below the study's
  ``gold_drift_threshold``;
- **QC outcomes**: the reviewers' decisions on their work and gold checks that stand: approved as is, amended
  (approved with the reviewer's corrections), returned; their shares of the decisions, and the
  mean amendment size (words the reviewer changed, overview and windows, as the amend's audit
  event recorded it: annotation.services.review.qc_edit_size);
- **active time per item**: the median active seconds of the items and gold checks done;
- **agreement with others**: on captions that this annotator and at least one other submitted
  as real work (double annotation), their overview verdict against each other annotator's: the share equal
  and Cohen's kappa over those pairs.

Small samples: no rate or agreement over fewer than
:data:`annotation.rules.gold_agreement.MIN_ITEMS` items (the profile's minimum group); such a cell is
blank and the row's `notes` say why.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Exists, OuterRef

from annotation.models import (
    Annotation,
    AuditEvent,
    CorrectionPass,
    GoldItem,
    Membership,
    Qualification,
    Study,
    Window,
    WindowCorrection,
)
from annotation.rules.agreement import cohen_kappa
from annotation.rules.gold_agreement import MIN_ITEMS, RECENT_CHECKS, GoldAgreement, gold_agreement, recent_accuracy
from annotation.selectors.progress import COUNTED, DECISIONS, SUBMITTED_ONCE, standing
from annotation.selectors.work_log import People
from scoring.metrics.edits import EditSizing
from scoring.metrics.exports import CorrectedCaption
from scoring.metrics.final import final_caption, verdict_of

Purpose = Annotation.Purpose
# What an annotator's queue holds: real work and hidden gold checks (the same flow, reviewed).


@dataclass
class QualityRow:
    """One annotator's row (rates None where too few items, `notes` saying why)."""

    person: str
    user_id: int
    items_done: int = 0
    gold_checks: int = 0
    practice: str = ""
    practice_attempts: int = 0
    practice_overview_agreement: float | None = None
    gold: GoldAgreement = field(default_factory=lambda: GoldAgreement(items=0))
    recent_gold_accuracy: float | None = None
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
    annotations = Annotation.objects.filter(caption__clip__study=study, purpose__in=Annotation.REAL_WORK).order_by()
    events = AuditEvent.objects.filter(
        study=study, annotation__isnull=False, annotation__purpose__in=Annotation.REAL_WORK
    ).order_by()
    counted = standing(events.filter(action__in=COUNTED))
    ids = set(Membership.objects.filter(study=study, role=Membership.Role.ANNOTATOR).values_list("user_id", flat=True))
    ids |= set(
        Annotation.objects.filter(caption__clip__study=study, purpose__in=(*Annotation.REAL_WORK, Purpose.PRACTICE))
        .order_by().values_list("annotator_id", flat=True).distinct()
    )
    rows = {pk: QualityRow(person=people.of(pk), user_id=pk) for pk in ids}

    submitted = counted.filter(action="submit").values_list("annotation__annotator_id", "annotation__purpose")
    for pk, purpose, n in submitted.annotate(n=Count("annotation_id", distinct=True)):
        if purpose == Purpose.WORK:
            rows[pk].items_done = n
        else:
            rows[pk].gold_checks = n
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
    _practice(study, rows)
    _gold_agreement(study, rows)
    for row in rows.values():
        if row.gold.note:
            row.notes.append(f"gold agreement {row.gold.note}")
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
            annotation__purpose=Purpose.WORK,
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


def _practice(study: Study, rows: dict[int, QualityRow]) -> None:
    """Each annotator's qualification: its state, attempts and last overview agreement."""
    for qualification in Qualification.objects.filter(study=study, user_id__in=list(rows)):
        row = rows[qualification.user_id]
        row.practice = qualification.state
        row.practice_attempts = qualification.attempts
        agreement = (qualification.result or {}).get("overview_agreement")
        row.practice_overview_agreement = float(agreement) if agreement is not None else None


def _snapshots(annotation_ids: list[int]) -> dict[int, dict[str, Any]]:
    """The annotator passes of these annotations as plain data (pass_snapshot's shape), in two
    queries whatever their number."""
    annotator = CorrectionPass.Kind.ANNOTATOR
    annotator_passes = CorrectionPass.objects.filter(annotation_id__in=annotation_ids, kind=annotator)
    passes = {p.pk: p for p in annotator_passes}
    windows: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in WindowCorrection.objects.filter(correction_pass_id__in=list(passes)).order_by(
        "correction_pass_id", "window__index"
    ).values("correction_pass_id", "window__index", "verdict", "scene", "shot", "start", "end", "modes"):
        windows[row["correction_pass_id"]].append({
            "index": row["window__index"], "verdict": row["verdict"], "scene": row["scene"], "shot": row["shot"],
            "start": row["start"], "end": row["end"], "modes": list(row["modes"]),
        })
    return {
        p.annotation_id: {
            "overview": {"verdict": p.overview_verdict, "text": p.overview_text, "modes": list(p.overview_modes)},
            "windows": windows[p.pk],
            "segmentation": {"verdict": p.segmentation_verdict, "modes": list(p.segmentation_modes),
                             "windows": list(p.corrected_windows)},
        }
        for p in passes.values()
    }


def gold_pairs(study: Study) -> dict[int, list[tuple[CorrectedCaption, CorrectedCaption]]]:
    """{annotator id: [(their caption, the gold caption)]} of every submitted gold check on a gold
    item whose gold verdict is final, oldest submission first; each side as its own annotator
    pass leaves the caption (scoring.metrics.final.final_caption)."""
    checks = list(
        Annotation.objects.filter(
            caption__clip__study=study, purpose=Purpose.GOLD_CHECK, state__in=SUBMITTED_ONCE,
            caption__gold_item__gold__state=Annotation.State.SUBMITTED,
        ).order_by("submitted_at", "pk").values_list("pk", "annotator_id", "caption_id")
    )
    if not checks:
        return {}
    captions = {caption_id for _, _, caption_id in checks}
    gold_of = dict(GoldItem.objects.filter(study=study, caption_id__in=captions).values_list("caption_id", "gold_id"))
    snapshots = _snapshots([pk for pk, _, _ in checks] + list(gold_of.values()))
    originals: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for window in Window.objects.filter(caption_id__in=list(gold_of)).values(
        "caption_id", "index", "start", "end", "scene", "shot"
    ):
        originals[window["caption_id"]].append(window)
    overviews = dict(
        Annotation.objects.filter(pk__in=[pk for pk, _, _ in checks]).values_list("caption_id", "caption__overview")
    )
    sizing = EditSizing.of(study)

    def as_caption(annotation_id: int, caption_id: int) -> CorrectedCaption:
        return final_caption(
            clip="", model="", original_overview=overviews[caption_id], original_windows=originals[caption_id],
            final=snapshots.get(annotation_id, {}), final_kind="annotator", sizing=sizing,
        )

    pairs: dict[int, list[tuple[CorrectedCaption, CorrectedCaption]]] = defaultdict(list)
    for pk, annotator_id, caption_id in checks:
        pairs[annotator_id].append((as_caption(pk, caption_id), as_caption(gold_of[caption_id], caption_id)))
    return pairs


def _gold_agreement(study: Study, rows: dict[int, QualityRow]) -> None:
    sizing = EditSizing.of(study)
    for pk, pairs in gold_pairs(study).items():
        row = rows.get(pk)
        if row is None:
            continue
        row.gold = gold_agreement(pairs, sizing=sizing)
        row.recent_gold_accuracy = recent_accuracy(
            [mine.overview_verdict == gold.overview_verdict for mine, gold in pairs], last=RECENT_CHECKS
        )
    for row in rows.values():
        if row.gold.items == 0 and not row.gold.note:
            row.gold = GoldAgreement(items=0, note=f"not computed: 0 items, needs at least {MIN_ITEMS}")


def gold_drift(*, study: Study, people: People) -> list[dict[str, Any]]:
    """The annotators whose recent gold accuracy is below the study's drift threshold (the
    dashboard's warning), lowest first: [{person, recent, checks}]."""
    threshold = float(study.gold_drift_threshold)
    drifting = []
    for pk, pairs in gold_pairs(study).items():
        recent = recent_accuracy([a.overview_verdict == b.overview_verdict for a, b in pairs], last=RECENT_CHECKS)
        if recent is not None and recent < threshold:
            drifting.append({"person": people.of(pk), "recent": recent, "checks": min(len(pairs), RECENT_CHECKS)})
    return sorted(drifting, key=lambda d: (d["recent"], d["person"]))


# The columns of the page, the API and the CSV, in order: (key, heading).
COLUMNS = (
    ("person", "annotator"),
    ("items_done", "items done"),
    ("practice", "practice"),
    ("practice_attempts", "practice attempts"),
    ("practice_overview_agreement", "practice overview agreement"),
    ("gold_checks", "gold checks done"),
    ("gold_overview_kappa", "gold: overview kappa"),
    ("gold_overview_agreement", "gold: overview agreement"),
    ("gold_mode_f1", "gold: mode F1"),
    ("gold_window_agreement", "gold: window agreement"),
    ("gold_words_from_gold", "gold: words from the gold correction"),
    ("gold_size_difference", "gold: edit-size difference (words)"),
    ("recent_gold_accuracy", f"recent gold accuracy (last {RECENT_CHECKS})"),
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


GOLD_FIELDS = ("overview_kappa", "overview_agreement", "mode_f1", "window_agreement", "words_from_gold",
               "size_difference")


def row_values(row: QualityRow) -> dict[str, Any]:
    gold = {f"gold_{name}": getattr(row.gold, name) for name in GOLD_FIELDS}
    values = {key: gold[key] if key in gold else getattr(row, key) for key, _ in COLUMNS}
    values["notes"] = "; ".join(row.notes)
    return values

