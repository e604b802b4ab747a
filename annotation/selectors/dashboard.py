"""The study admin's dashboard while a study runs: who is idle, which QC claims ran out, which
returns wait for their annotator. Each list is one query, counted and ordered in the database,
so the dashboard costs the same for ten annotations or a hundred thousand."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db.models import Count, IntegerField, Min, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation.models import Annotation, AuditEvent, Membership, Study
from annotation.rules import workflow

SHOWN = 20  # rows listed per kind; the counts cover all of them
OPEN_WORK = (workflow.ASSIGNED, workflow.IN_PROGRESS, workflow.RETURNED)


def idle_annotators(study: Study, *, idle_minutes: int, now=None) -> list[dict[str, Any]]:
    """Annotators with work left (not started, in progress or returned) whose last action in the
    study is older than `idle_minutes` (or who never acted), longest idle first. One query: a
    probe of the audit index (study, actor, at) and a count of open items per annotator."""
    now = now or timezone.now()
    last = AuditEvent.objects.filter(study=study, actor=OuterRef("user_id")).order_by("-at").values("at")[:1]
    open_items = (
        Annotation.objects.filter(caption__clip__study=study, annotator=OuterRef("user_id"), state__in=OPEN_WORK)
        .order_by().values("annotator").annotate(n=Count("pk")).values("n")
    )
    rows = (
        Membership.objects.filter(study=study, role=Membership.Role.ANNOTATOR)
        .annotate(last_action=Subquery(last),
                  open_items=Coalesce(Subquery(open_items, output_field=IntegerField()), 0))
        .filter(open_items__gt=0)
        .filter(Q(last_action__isnull=True) | Q(last_action__lt=now - timedelta(minutes=idle_minutes)))
        .order_by("last_action", "user__username")
        .values("user__username", "last_action", "open_items")
    )
    return [{"username": r["user__username"], "last_action": r["last_action"], "open_items": r["open_items"]}
            for r in rows]


def expired_claims(study: Study, *, now=None) -> dict[str, Any]:
    """QC claims that ran out while the item is still in review: the reviewer left it. Their
    count and the oldest SHOWN (two queries on the index of claims in review)."""
    now = now or timezone.now()
    rows = Annotation.objects.filter(
        caption__clip__study=study, state=workflow.IN_REVIEW, claim_expires_at__lt=now)
    shown = list(rows.order_by("claim_expires_at", "pk").values(
        "pk", "caption__clip__name", "reviewer__username", "claim_expires_at")[:SHOWN])
    return {"count": rows.count(), "items": [
        {"id": r["pk"], "clip": r["caption__clip__name"], "reviewer": r["reviewer__username"],
         "expired_at": r["claim_expires_at"]} for r in shown]}


def returns_waiting(study: Study) -> list[dict[str, Any]]:
    """Returned annotations waiting for their annotator, per annotator, oldest assignment first
    (one grouped query)."""
    rows = (
        Annotation.objects.filter(caption__clip__study=study, state=workflow.RETURNED)
        .order_by().values("annotator__username")
        .annotate(n=Count("pk"), oldest=Min("assigned_at"))
        .order_by("oldest", "annotator__username")
    )
    return [{"username": r["annotator__username"], "count": r["n"]} for r in rows]


def study_dashboard(study: Study, *, idle_minutes: int, now=None) -> dict[str, Any]:
    """Everything the dashboard lists, in four queries."""
    returns = returns_waiting(study)
    return {
        "idle_minutes": idle_minutes,
        "idle": idle_annotators(study, idle_minutes=idle_minutes, now=now),
        "expired_claims": expired_claims(study, now=now),
        "returns": returns,
        "returns_count": sum(r["count"] for r in returns),
    }
