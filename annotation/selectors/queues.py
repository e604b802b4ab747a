"""Read-only views of the workflow: an annotator's queue and the QC review queue.

Both are read a page at a time, in the order of an index (see Annotation.Meta.indexes),
with a fixed number of queries whatever the size of the queue: counts come from one
grouped query, the page from one query joining what each row shows, and the next page
starts after the last row shown (keyset pagination: a cursor, not an offset, so page 40 is
as cheap as page 1 and a row submitted meanwhile neither repeats nor skips one).

The review queue can put risky items first; the risk is stored on each annotation when it
is submitted (annotation.rules.risk explains the score).
"""

from __future__ import annotations

import base64
import json
from datetime import datetime
from typing import Any

from django.db.models import Case, Count, Exists, IntegerField, OuterRef, Q, QuerySet, Subquery, Value, When
from django.utils import timezone

from annotation.errors import ServiceError
from annotation.interchange.formats.strict_json import json_loads_strict
from annotation.models import Annotation, CorrectionPass, Qualification, Study, StudyState, Window
from annotation.prepared import PreparedRead
from annotation.rules import workflow
from annotation.selectors.counted import not_withdrawn

PAGE = 100
MAX_PAGE = 500
WAITING = (workflow.RETURNED, workflow.IN_PROGRESS, workflow.ASSIGNED)
DONE = (workflow.SUBMITTED, workflow.IN_REVIEW, workflow.APPROVED)
# The annotator's order: returned first (with the comment), then in progress, then new,
# then what is done; within each, in the order they were assigned.
QUEUE_RANK = {workflow.RETURNED: 0, workflow.IN_PROGRESS: 1, workflow.ASSIGNED: 2}


class BadCursor(ServiceError):
    """A page cursor that this server did not write."""


def encode_cursor(values: list[Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(values).encode()).decode().rstrip("=")


def decode_cursor(cursor: str, *, size: int) -> list[Any]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        values = json_loads_strict(base64.urlsafe_b64decode(padded.encode()).decode())
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadCursor(
            f"The page cursor {cursor[:40]!r} is not one this server gave out."
        ) from exc
    if not isinstance(values, list) or len(values) != size:
        raise BadCursor(f"The page cursor {cursor[:40]!r} is not one this server gave out.")
    return values


def page_size(limit: Any, default: int = PAGE) -> int:
    """`limit` from a request, as a page size from 1 to MAX_PAGE."""
    if limit in (None, ""):
        return default
    try:
        size = int(limit)
    except (TypeError, ValueError):
        raise ServiceError(f"limit must be a whole number, not {str(limit)[:20]!r}.") from None
    if not 1 <= size <= MAX_PAGE:
        raise ServiceError(f"limit must be from 1 to {MAX_PAGE}, not {size}.")
    return size


def _after(fields: list[tuple[str, bool]], values: list[Any]) -> Q:
    """Rows after `values` in the order of `fields` ((name, descending) pairs): the keyset
    condition (a > x) or (a = x and b > y) or ..., which the matching index answers."""
    condition = Q(pk__in=[])
    equal = Q()
    for (name, descending), value in zip(fields, values, strict=True):
        condition |= equal & Q(**{f"{name}__{'lt' if descending else 'gt'}": value})
        equal &= Q(**{name: value})
    return condition


def windows_per_caption() -> Subquery:
    return Subquery(
        Window.objects.filter(caption_id=OuterRef("caption_id"))
        .order_by()
        .values("caption_id")
        .annotate(n=Count("pk"))
        .values("n"),
        output_field=IntegerField(),
    )


def _queue_rows(*, study_id: int, annotator_id: int, practice_only: bool) -> QuerySet[Annotation]:
    """The annotator's items in the study; only the practice (and gold verdicts) while real work
    waits for their qualification."""
    mine = Annotation.objects.filter(caption__clip__study_id=study_id, annotator_id=annotator_id)
    return mine.exclude(purpose__in=Annotation.REAL_WORK) if practice_only else mine


def _queue_counts(rows: QuerySet[Annotation]) -> QuerySet[Annotation]:
    """Per state, its items and those of them with a reviewer's comment."""
    return (rows.order_by().values("state")
            .annotate(n=Count("pk"), commented=Count("pk", filter=~Q(return_comment=""))))


# The annotator's order: open practice first (a new annotator's queue starts with the practice
# set), then returned, in progress, new, and what is done; a page ends at (rank, assigned_at, id).
_QUEUE_ORDER = [("rank", False), ("assigned_at", False), ("id", False)]
_QUEUE_COLUMNS = ("id", "state", "return_comment", "rank", "assigned_at", "windows",
                  "caption__clip__name", "caption__model__alias")


def _queue_ranked(rows: QuerySet[Annotation]) -> QuerySet[Annotation]:
    rank = Case(
        When(purpose=Annotation.Purpose.PRACTICE, state__in=WAITING, then=Value(-1)),
        *(When(state=state, then=Value(n)) for state, n in QUEUE_RANK.items()),
        default=Value(len(QUEUE_RANK)),
        output_field=IntegerField(),
    )
    return rows.annotate(rank=rank, windows=windows_per_caption())


def _queue_page(rows: QuerySet[Annotation], limit: int) -> QuerySet[Annotation]:
    """`limit` rows and one more (which says whether there is a next page)."""
    return rows.order_by("rank", "assigned_at", "id").values(*_QUEUE_COLUMNS)[: limit + 1]


def _prepared_counts(practice_only: bool) -> PreparedRead:
    def queue_counts(*, study_id: int, annotator_id: int):
        return _queue_counts(_queue_rows(study_id=study_id, annotator_id=annotator_id, practice_only=practice_only))
    return PreparedRead(queue_counts)


def _prepared_first_page(practice_only: bool, limit: int) -> PreparedRead:
    def queue_first_page(*, study_id: int, annotator_id: int):
        rows = _queue_rows(study_id=study_id, annotator_id=annotator_id, practice_only=practice_only)
        return _queue_page(_queue_ranked(rows), limit)
    return PreparedRead(queue_first_page)


# Prepared reads (annotation.prepared) of the counts and of the first page at the sizes the pages
# ask for: the study page's next item (1) and the queue page's (PAGE). Other pages are built plainly.
_COUNTS = {practice_only: _prepared_counts(practice_only) for practice_only in (False, True)}
_FIRST_PAGES = {(practice_only, limit): _prepared_first_page(practice_only, limit)
                for practice_only in (False, True) for limit in (1, PAGE)}


def annotator_queue(
    *, study: Study, annotator, after: str | None = None, limit: int = PAGE
) -> dict[str, Any]:
    """The annotator's items, returned first (with the comment), then in progress, then new,
    then done; a page of `limit` from the cursor `after`, with counts over the whole queue.
    Empty while the study is being set up (annotation.services.lifecycle)."""
    if study.state == StudyState.SETUP:
        return _queue_answer(counts={}, returned=0, page=[], limit=limit)
    # Real work waits for qualification: the queue holds the practice (and gold verdicts).
    practice_only = not real_work_allowed(study, annotator)
    ids = {"study_id": study.pk, "annotator_id": annotator.pk}
    counts: dict[str, int] = {}
    returned = 0
    for row in _COUNTS[practice_only](**ids):
        counts[row["state"]] = row["n"]
        if row["state"] in WAITING:
            returned += row["commented"]
    first_page = _FIRST_PAGES.get((practice_only, limit))
    if after is None and first_page is not None:
        page = first_page(**ids)
    else:
        rows = _queue_ranked(_queue_rows(**ids, practice_only=practice_only))
        if after:
            rank_value, assigned_at, pk = decode_cursor(after, size=3)
            rows = rows.filter(_after(_QUEUE_ORDER, [rank_value, _instant(assigned_at), pk]))
        page = list(_queue_page(rows, limit))
    return _queue_answer(counts=counts, returned=returned, page=page, limit=limit)


def _queue_answer(*, counts: dict[str, int], returned: int, page: list[dict], limit: int) -> dict[str, Any]:
    more = len(page) > limit
    page = page[:limit]
    items = [
        {
            "id": row["id"],
            "state": row["state"],
            "clip": row["caption__clip__name"],
            "model": row["caption__model__alias"],
            "windows": row["windows"] or 0,
            "return_comment": row["return_comment"],
            "url": f"/annotate/{row['id']}/",
        }
        for row in page
    ]
    last = page[-1] if page else None
    return {
        "counts": counts,
        "total": sum(counts.values()),
        "done": sum(counts.get(state, 0) for state in DONE),
        "returned": returned,
        "items": items,
        "next": encode_cursor([last["rank"], last["assigned_at"].isoformat(), last["id"]])
        if more and last
        else None,
    }


def real_work_allowed(study: Study, annotator) -> bool:
    """Whether the person receives real work (annotation.services.gold.real_work_allowed: the
    same rule, read here without the services)."""
    if not study.requires_qualification:
        return True
    return Qualification.objects.filter(study=study, user=annotator, state=Qualification.State.PASSED).exists()


def _instant(value: Any) -> datetime:
    try:
        return datetime.fromisoformat(str(value))
    except ValueError as exc:
        raise BadCursor("The page cursor is not one this server gave out.") from exc


# States an annotation reaches only after a submission (so it has a submission time).
REVIEWABLE_STATES = (workflow.SUBMITTED, workflow.IN_REVIEW, workflow.APPROVED, workflow.RETURNED)
REVIEW_ORDERS = {
    # name: (fields with descending flags) — each matches an index on (state, ...).
    "risk": [("risk", True), ("submitted_at", False), ("id", False)],
    "oldest": [("submitted_at", False), ("id", False)],
}


# The review queue counts its items up to this many; beyond, it says "more than 1,000".
REVIEW_COUNT_LIMIT = 1000


def review_candidates_of(*, study_id: int, reviewer_id: int, states: list[str], now: Any) -> QuerySet[Annotation]:
    """review_candidates by ids, with `now` a time or ``Now()`` (a prepared read: services.review)."""
    # Asked per candidate (NOT EXISTS, one lookup in the caption's unique index), not as the set of
    # all captions the reviewer annotated (NOT IN), which PostgreSQL's plan kept for a prepared
    # statement's runs reads whole when it cannot tell how many that is.
    mine = Annotation.objects.filter(caption_id=OuterRef("caption_id"), annotator_id=reviewer_id)
    # Gold verdicts and practice attempts are not reviewed; hidden gold checks are, like work.
    # Whoever made a caption's gold verdict annotated it, so never reviews it.
    rows = Annotation.objects.filter(
        ~Exists(mine), caption__clip__study_id=study_id, state__in=states,
        purpose__in=Annotation.REAL_WORK,
    ).exclude(undo_until__gt=now, state=workflow.SUBMITTED)
    return not_withdrawn(rows)


def review_candidates(
    *,
    study: Study,
    reviewer,
    states: list[str],
    model_alias: str | None = None,
    annotator: str | None = None,
) -> QuerySet[Annotation]:
    """Annotations of `study` in `states` that `reviewer` may review: not their own, nor anyone's
    version of a caption they annotated themselves (review_claim refuses those too), nor a
    submission its annotator may still undo (settings.UNDO_SECONDS), nor the work of someone who
    withdrew from the study (it no longer counts: annotation.services.withdrawal)."""
    rows = review_candidates_of(study_id=study.pk, reviewer_id=reviewer.pk, states=states, now=timezone.now())
    if model_alias:
        rows = rows.filter(caption__model__alias=model_alias)
    if annotator:
        rows = rows.filter(annotator__username=annotator)
    return rows


def review_queue(
    *,
    study: Study,
    reviewer,
    order: str = "risk",
    model_alias: str | None = None,
    annotator: str | None = None,
    state: str | None = None,
    after: str | None = None,
    limit: int = PAGE,
    count_limit: int = REVIEW_COUNT_LIMIT,
) -> dict[str, Any]:
    """Submitted and in-review annotations (not the reviewer's own), riskiest or oldest first;
    a page of `limit` from the cursor `after`, with the count of the whole filtered queue.

    The count stops at `count_limit` ("count_capped" is then true, and the page says "More
    than 1,000 items"): counting is the one part of a page whose cost would grow with the
    queue. The progress page has the exact numbers."""
    if order not in REVIEW_ORDERS:
        raise ServiceError(f"Unknown order {order!r}: use {' or '.join(REVIEW_ORDERS)}.")
    if state and state not in REVIEWABLE_STATES:
        raise ServiceError(f"Unknown state {state!r}: use one of {', '.join(REVIEWABLE_STATES)}.")
    states = [state] if state else [workflow.SUBMITTED, workflow.IN_REVIEW]
    rows = review_candidates(
        study=study, reviewer=reviewer, states=states, model_alias=model_alias, annotator=annotator
    )
    count = rows.order_by()[: count_limit + 1].count()  # no ORDER BY: it reads at most the limit
    fields = REVIEW_ORDERS[order]
    if after:
        values = decode_cursor(after, size=len(fields))
        if order == "risk":
            values[1] = _instant(values[1])
        else:
            values[0] = _instant(values[0])
        rows = rows.filter(_after(fields, values))
    verdict = Subquery(
        CorrectionPass.objects.filter(
            annotation_id=OuterRef("pk"), kind=CorrectionPass.Kind.ANNOTATOR
        ).values("overview_verdict")[:1]
    )
    page = list(
        rows.annotate(overview_verdict=verdict)
        .order_by(*(f"-{name}" if descending else name for name, descending in fields))
        .values(
            "id",
            "state",
            "risk",
            "risk_reasons",
            "submitted_at",
            "claim_expires_at",
            "overview_verdict",
            "caption__clip__name",
            "caption__model__alias",
            "annotator__username",
            "reviewer__username",
        )[: limit + 1]
    )
    more = len(page) > limit
    page = page[:limit]
    items = [
        {
            "id": row["id"],
            "state": row["state"],
            "clip": row["caption__clip__name"],
            "model": row["caption__model__alias"],
            "annotator": row["annotator__username"],
            "reviewer": row["reviewer__username"],
            "claim_expires_at": row["claim_expires_at"].isoformat()
            if row["claim_expires_at"]
            else None,
            "submitted_at": row["submitted_at"].isoformat() if row["submitted_at"] else None,
            "overview_verdict": row["overview_verdict"] or "",
            "risk": row["risk"],
            "risk_reasons": row["risk_reasons"],
            "url": f"/review/{row['id']}/",
        }
        for row in page
    ]
    cursor = None
    if more and page:
        last = page[-1]
        key = {
            "risk": last["risk"],
            "submitted_at": last["submitted_at"].isoformat(),
            "id": last["id"],
        }
        cursor = encode_cursor([key[name] for name, _ in fields])
    return {
        "order": order,
        "count": min(count, count_limit),
        "count_capped": count > count_limit,
        "items": items,
        "next": cursor,
    }
