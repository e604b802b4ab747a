"""The payment report of a study's crowd participants (its admins only) and the bulk-bonus
file that pays them on their platform.

Per participant (annotation.models.Participant), in the order they joined:

- **pseudonym**, and the **platform id** opened from its sealed copy
  (annotation.services.recruitment.participant_id_keys); None ("unknown") for a participant
  who joined before ids were kept, or whose id no key opens (the site's SECRET_KEY changed
  without the old one in SECRET_KEY_FALLBACKS);
- **items done** (submitted or further) of the items given, as the members page counts them
  (annotation.services.recruitment.participants_list);
- **active seconds**: the sum of the active time recorded on each of their annotations in the
  study (work, gold checks and practice alike). That time is capped where it is recorded, on
  each save (annotation.services.annotating.active_credit): never more than the wall time since
  the item was opened or last saved, plus a few seconds of slack, nor 10 minutes a save. It is
  read here, not computed again;
- **joined** and **completed** (when every item given was done) and the **completion time**
  between them, in seconds;
- **state**: working, completed, timed out (their time allowed passed before they completed) or
  withdrawn, and **since** when, as the members page says it
  (annotation.rules.recruitment.participant_state);
- **gold checks** and **gold accuracy** where the study has gold items: the share of their gold
  checks whose overview verdict equals the gold one, as the annotator quality page computes it
  (annotation.selectors.annotator_quality, "gold: overview agreement"; blank below its minimum).

The platform ids appear in this report, its CSV and the bonus file only; never in a log, the
release, the bundle or any other page. Nothing here writes but the record of each reading: every
answer that opens the ids (the Payments page, the report as JSON or CSV, the bonus preview and
the bulk-bonus file) goes through :func:`payment_report_read` or :func:`payment_bonus_read`,
which leave one audit event ``payments_read`` naming who read what and how many ids, never an
id (the study's history shows it).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.db.models import Sum

from annotation.models import Annotation, GoldItem, Participant, Study
from annotation.rules import payments, sealed_ids
from annotation.selectors.annotator_quality import annotator_quality
from annotation.selectors.work_log import People
from annotation.services.recruitment import participant_id_keys, participants_list
from annotation.services.studies import study_audit

UNKNOWN = "unknown"


@dataclass(frozen=True)
class PaymentRow:
    pseudonym: str
    participant_id: str | None
    link: int
    items_done: int
    items_assigned: int
    active_seconds: float
    joined_at: datetime
    completed_at: datetime | None
    completion_seconds: float | None
    state: str
    state_at: datetime | None
    gold_checks: int | None
    gold_accuracy: float | None


@dataclass(frozen=True)
class PaymentReport:
    has_gold: bool
    rows: list[PaymentRow]


# The report's columns, in order, as the CSV's header and the API's keys: (key, heading).
COLUMNS = (
    ("pseudonym", "pseudonym"),
    ("participant_id", "platform participant id"),
    ("link", "recruitment link"),
    ("items_done", "items done"),
    ("items_assigned", "items given"),
    ("active_seconds", "active time (s)"),
    ("joined_at", "joined"),
    ("completed_at", "completed"),
    ("completion_seconds", "completion time (s)"),
    ("state", "state"),
    ("state_at", "since"),
    ("gold_checks", "gold checks compared"),
    ("gold_accuracy", "gold accuracy"),
)


def payment_report(*, study: Study) -> PaymentReport:
    """Every participant of the study with what paying them needs (see the module)."""
    people = list(Participant.objects.filter(study=study).order_by("joined_at", "pk"))
    progress = {row.pseudonym: row for row in participants_list(study=study)}
    seconds = dict(
        Annotation.objects.filter(caption__clip__study=study, annotator_id__in=[p.user_id for p in people])
        .order_by().values("annotator_id").annotate(total=Sum("active_seconds")).values_list("annotator_id", "total")
    )
    has_gold = GoldItem.objects.filter(study=study).exists()
    gold = {row.user_id: row.gold for row in annotator_quality(study=study, people=People({}))} if has_gold else {}
    keys = participant_id_keys(study) if people else []
    rows = []
    for person in people:
        done = progress[person.pseudonym]
        agreement = gold.get(person.user_id)
        completion = (person.completed_at - person.joined_at).total_seconds() if person.completed_at else None
        rows.append(PaymentRow(
            pseudonym=person.pseudonym,
            participant_id=sealed_ids.unseal(keys, person.pid_sealed, study=study.pk, digest=person.pid_hash),
            link=person.link_id, items_done=done.done, items_assigned=done.assigned,
            active_seconds=round(float(seconds.get(person.user_id) or 0.0), 1),
            joined_at=person.joined_at, completed_at=person.completed_at,
            completion_seconds=round(completion, 1) if completion is not None else None,
            state=done.state, state_at=done.state_at,
            gold_checks=(agreement.items if agreement else 0) if has_gold else None,
            gold_accuracy=agreement.overview_agreement if agreement else None,
        ))
    return PaymentReport(has_gold=has_gold, rows=rows)


def row_values(row: PaymentRow) -> dict[str, Any]:
    """The row as the API gives it (the platform id None when unknown)."""
    return {key: getattr(row, key) for key, _ in COLUMNS}


def _cell(value: Any) -> str:
    """A CSV cell: times in ISO 8601, nothing for a blank, text a spreadsheet cannot take for a
    formula (a leading =, +, -, @ quoted with ')."""
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.isoformat()
    text = str(value)
    if isinstance(value, str) and text[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + text
    return text


def payments_csv(report: PaymentReport) -> str:
    """The report as CSV: a header of COLUMNS' keys, one line per participant; an unknown
    platform id reads `unknown`, a blank cell is empty."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([key for key, _ in COLUMNS])
    for row in report.rows:
        values = row_values(row)
        values["participant_id"] = values["participant_id"] or UNKNOWN
        writer.writerow([_cell(values[key]) for key, _ in COLUMNS])
    return out.getvalue()


@dataclass(frozen=True)
class BonusLine:
    pseudonym: str
    participant_id: str
    active_seconds: float
    amount: Decimal


@dataclass(frozen=True)
class Bonus:
    """The bonuses at `rate` per active hour; who was left out and why."""

    rate: Decimal
    lines: list[BonusLine]
    without_id: list[str]  # pseudonyms of participants whose platform id is unknown
    nothing_due: list[str]  # pseudonyms of participants whose amount rounds to 0.00

    @property
    def total(self) -> Decimal:
        return sum((line.amount for line in self.lines), Decimal("0.00"))

    @property
    def skipped(self) -> int:
        return len(self.without_id) + len(self.nothing_due)

    @property
    def file(self) -> str:
        """The bulk-bonus file (annotation.rules.payments.bonus_lines)."""
        return payments.bonus_lines((line.participant_id, line.amount) for line in self.lines)


def bonus_of(rows: Iterable[PaymentRow], rate: Decimal) -> Bonus:
    """The bonus of each participant of `rows` at `rate` per hour of active time."""
    lines, without_id, nothing_due = [], [], []
    for row in rows:
        amount = payments.bonus_amount(rate, row.active_seconds)
        if row.participant_id is None:
            without_id.append(row.pseudonym)
        elif amount <= 0:
            nothing_due.append(row.pseudonym)
        else:
            lines.append(BonusLine(row.pseudonym, row.participant_id, row.active_seconds, amount))
    return Bonus(rate=rate, lines=lines, without_id=without_id, nothing_due=nothing_due)


# What an admin read, as the audit event ``payments_read`` names it.
READ_PAGE = "page"
READ_JSON = "report (JSON)"
READ_CSV = "report (CSV)"
READ_BONUS = "bonus preview"
READ_BONUS_FILE = "bulk-bonus file"


def _read_record(*, study: Study, actor, read: str, ids: int, participants: int,
                 rate: Decimal | None = None) -> None:
    """The audit event of one reading of the platform ids: who (actor), when (at), which study,
    what (`read`), how many ids it opened, of how many participants; never an id."""
    after: dict[str, Any] = {"read": read, "ids": ids, "participants": participants}
    if rate is not None:
        after["rate"] = f"{rate:.2f}"
    study_audit(study=study, actor=actor, action="payments_read", before={}, after=after)


@transaction.atomic
def payment_report_read(*, study: Study, actor, read: str) -> PaymentReport:
    """The payment report for `actor` to read as `read` (READ_PAGE, READ_JSON, READ_CSV), with
    the audit event of the reading: the ids are never opened without it."""
    report = payment_report(study=study)
    _read_record(study=study, actor=actor, read=read, participants=len(report.rows),
                 ids=sum(1 for row in report.rows if row.participant_id is not None))
    return report


@transaction.atomic
def payment_bonus_read(*, study: Study, actor, rate: object, read: str) -> Bonus:
    """The bonuses at `rate` for `actor` to read as `read` (READ_BONUS, READ_BONUS_FILE), with
    the audit event of the reading (the ids in the lines). A refused rate (RateProblem) opens
    nothing and records nothing."""
    parsed = payments.parse_rate(rate)
    report = payment_report(study=study)
    bonus = bonus_of(report.rows, parsed)
    _read_record(study=study, actor=actor, read=read, ids=len(bonus.lines), participants=len(report.rows),
                 rate=parsed)
    return bonus
