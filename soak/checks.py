"""What must hold after the soak, read from the database (Django set up on the soak's cluster)
and from what the people saw. Each check gives a list of violations, each a sentence naming
the annotation, request or job; the goal is none.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

from soak.faults import Window, in_window
from soak.people import Ledger

TEXTS = (".text", ".scene", ".shot")


def leaves(snapshot: dict[str, Any]) -> dict[str, Any]:
    """A pass snapshot as {path: value}, the paths of the audit trail's save events
    (``overview.text``, ``window:2.scene``), without empty values."""
    flat: dict[str, Any] = {}
    for part in ("overview", "segmentation"):
        for key, value in (snapshot.get(part) or {}).items():
            flat[f"{part}.{key}"] = value
    for window in snapshot.get("windows") or []:
        for key, value in window.items():
            if key != "index":
                flat[f"window:{window['index']}.{key}"] = value
    return {path: value for path, value in flat.items() if value not in (None, "", [])}


def replay(events: list) -> dict[str, Any]:
    """An annotation's audit trail replayed from an empty pass: the annotator pass's leaves
    after each save, the QC pass, the state, whether the overview is locked, and claims that
    overlapped (another reviewer's claim taken while one was live)."""
    flat: dict[str, Any] = {}
    after_saves: list[dict[str, Any]] = []
    state, locked, qc = "assigned", False, None
    holder, until, double = None, None, []
    for event in events:
        after = event.after or {}
        if event.action == "save":
            for path, value in after.items():
                if path.endswith(TEXTS) and isinstance(value, dict):
                    text = flat.get(path) or ""
                    value = text[: value["at"]] + value["insert"] + text[value["at"] + value["delete"]:]
                flat[path] = value
            after_saves.append({p: v for p, v in flat.items() if v not in (None, "", [])})
        elif event.action == "lock_overview":
            locked = True
        elif event.action == "amend":
            qc = {k: v for k, v in after.items() if k != "edit_size"}
            state = "approved"
        elif event.action == "claim":
            expires = datetime.fromisoformat(after["claim_expires_at"])
            if holder is not None and holder != event.actor_id and event.at < until:
                double.append(f"claimed by user {event.actor_id} at {event.at:%H:%M:%S.%f} while user "
                              f"{holder}'s claim ran until {until:%H:%M:%S}")
            holder, until = event.actor_id, expires
        if event.action in ("approve", "amend", "return", "release", "submit"):
            holder = None
        if event.action == "return" and any(u.get("unit") == "overview" for u in after.get("units", [])):
            locked = False
        if event.action == "undo":
            if after.get("undone") == "lock_overview":
                locked = False
            if after.get("undone") == "approve":
                holder, until = event.actor_id, event.at.replace(year=event.at.year + 1)
        if "state" in after:
            state = after["state"]
    return {"leaves": {p: v for p, v in flat.items() if v not in (None, "", [])}, "after_saves": after_saves,
            "state": state, "locked": locked, "qc": qc, "double": double}


def check_annotations(slug: str, ledger: Ledger) -> dict[str, list[str]]:
    """Acknowledged saves stored; audit trails replaying to the stored state; no item claimed
    by two reviewers at once (from the audit trail and from the reviewers' own answers)."""
    from annotation.models import Annotation, AuditEvent, CorrectionPass
    from annotation.services.annotation_common import pass_snapshot

    found: dict[str, list[str]] = {"saves lost": [], "audit replay differs": [], "claimed twice": []}
    annotations = list(Annotation.objects.filter(caption__clip__study__slug=slug).prefetch_related("passes"))
    events = defaultdict(list)
    for event in AuditEvent.objects.filter(annotation__in=annotations).order_by("at", "pk"):
        events[event.annotation_id].append(event)
    for annotation in annotations:
        passes = {p.kind: p for p in annotation.passes.all()}
        stored = leaves(pass_snapshot(passes.get(CorrectionPass.Kind.ANNOTATOR)))
        replayed = replay(events[annotation.pk])
        where = f"annotation {annotation.pk}"
        if replayed["leaves"] != stored:
            differs = {k: (stored.get(k), replayed["leaves"].get(k))
                       for k in stored.keys() | replayed["leaves"].keys()
                       if stored.get(k) != replayed["leaves"].get(k)}
            found["audit replay differs"].append(f"{where}: annotator pass {str(differs)[:300]}")
        if replayed["state"] != annotation.state:
            found["audit replay differs"].append(f"{where}: state {replayed['state']} replayed, "
                                                 f"{annotation.state} stored")
        if replayed["locked"] != (annotation.overview_locked_at is not None):
            found["audit replay differs"].append(f"{where}: overview lock {replayed['locked']} replayed")
        qc = passes.get(CorrectionPass.Kind.QC)
        if qc is not None and leaves(replayed["qc"] or {}) != leaves(pass_snapshot(qc)):
            found["audit replay differs"].append(f"{where}: QC pass differs from its last amend event")
        found["claimed twice"] += [f"{where}: {text}" for text in replayed["double"]]
        acknowledged = [leaves(snapshot) for snapshot in ledger.saves.get(annotation.pk, [])]
        history = replayed["after_saves"]
        for number, snapshot in enumerate(acknowledged):
            if snapshot and snapshot not in history:
                found["saves lost"].append(f"{where}: acknowledged save {number + 1} of {len(acknowledged)} "
                                           "is not in the audit trail")
        if acknowledged and annotation.pk not in ledger.uncertain and acknowledged[-1] != stored:
            found["saves lost"].append(f"{where}: the last acknowledged save is not what is stored")
    by_item = defaultdict(list)
    for pk, reviewer, started, ended in ledger.claims:
        by_item[pk].append((started, ended or float("inf"), reviewer))
    for pk, claims in by_item.items():
        claims.sort()
        for (s1, e1, r1), (s2, _e2, r2) in zip(claims, claims[1:], strict=False):
            if r1 != r2 and s2 < e1:
                found["claimed twice"].append(f"annotation {pk}: {r2} was answered a claim at {s2:.3f} "
                                              f"while {r1}'s claim from {s1:.3f} was not finished")
    return found


def check_answers(ledger: Ledger, windows: list[Window]) -> dict[str, list[str]]:
    """500s outside the faults' windows, and retries that did not converge."""
    outside = []
    for request in ledger.requests:
        if request.status >= 500 and in_window(windows, request.started, request.ended) is None:
            outside.append(f"{request.person}: {request.method} {request.path} {request.body[:200]!r} "
                           f"-> {request.status} {request.answer[:200]!r} at {request.started:.3f}")
    return {"500 outside a fault": outside, "retries not converged": list(ledger.not_converged)}


def profile_states(media_root: Path, slug: str) -> dict[str, str]:
    """Each profile export's state, read from its status file (as scoring.profiles keeps it),
    without importing the export's heavy libraries here."""
    states = {}
    for path in sorted((media_root / "profiles" / slug).glob("*/status.json")):
        try:
            states[path.parent.name] = json.loads(path.read_text())["state"]
        except (OSError, ValueError, KeyError):
            states[path.parent.name] = "unreadable"
    return states


def running_jobs(slug: str) -> list[str]:
    """Jobs still running (or queued) in the database and the profile folders."""
    from django.conf import settings

    from annotation.models import CaptionImportJob, Study
    from scoring.models import ScoreJob

    study = Study.objects.get(slug=slug)
    left = [f"scoring job {pk}: {status}" for pk, status in
            ScoreJob.objects.filter(study=study, status__in=["queued", "running"]).values_list("pk", "status")]
    left += [f"caption import job {pk}: {state}" for pk, state in
             CaptionImportJob.objects.filter(study=study, state__in=["queued", "running"]).values_list("pk", "state")]
    left += [f"profile job {job}: {state}" for job, state in profile_states(Path(settings.MEDIA_ROOT), slug).items()
             if state in ("queued", "running")]
    return left


def job_states(slug: str) -> dict[str, dict[str, int]]:
    from django.conf import settings

    from annotation.models import CaptionImportJob, Study
    from scoring.models import ScoreJob

    study = Study.objects.get(slug=slug)
    return {
        "scoring": dict(Counter(ScoreJob.objects.filter(study=study).values_list("status", flat=True))),
        "caption import": dict(Counter(CaptionImportJob.objects.filter(study=study).values_list("state", flat=True))),
        "profile": dict(Counter(profile_states(Path(settings.MEDIA_ROOT), slug).values())),
    }
