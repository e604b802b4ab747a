"""What must hold after the soak, read from the database (Django set up on the soak's cluster)
and from what the people saw. Each check gives a list of violations, each a sentence naming
the annotation, request or job; the goal is none.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from soak.people import PLANTED_CLIP, Request, Sent

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


@dataclass
class Event:
    """An audit event as the checks read it (from AuditEvent, or planted by a test)."""

    annotation: int
    action: str
    actor: str  # the username
    actor_id: int | None
    at: datetime
    after: dict


@dataclass
class Stored:
    """An annotation as the database holds it: its state, overview lock and passes' leaves."""

    pk: int
    state: str
    locked: bool
    annotator: dict[str, Any]
    qc: dict[str, Any] | None = None


# The states an annotation may be in after each acknowledged action, when nothing was sent to
# it afterwards (a reviewer's claim may follow a submit unseen: its answer may have been lost).
STATES_AFTER: dict[str, set[str]] = {
    "save": {"in_progress"}, "lock_overview": {"in_progress"}, "submit": {"submitted", "in_review"},
    "claim": {"in_review", "submitted"}, "approve": {"approved"}, "amend": {"approved"},
    "return": {"returned", "in_progress"}, "undo lock_overview": {"in_progress"},
    "undo submit": {"in_progress"}, "undo approve": {"in_review"}, "undo amend": {"in_review"},
}
ANY = object()  # a value the person may or may not have stored (sent without an answer)


def holds(snapshot: dict[str, Any], sent: dict[str, Any]) -> bool:
    return all(snapshot.get(path) == value for path, value in sent.items())


def check_saves(where: str, saves: list[Sent], history: list[dict[str, Any]], stored: dict[str, Any]) -> list[str]:
    """The annotator's saves against the audit trail (`history`: the pass after each save
    event, replayed) and the stored pass: each acknowledged save, as sent, is in the trail, in
    the order sent; each value stored is the last one sent (or, when the last one got no
    answer, one of those sent since the last answered)."""
    problems = []
    acknowledged = [save for save in saves if save.acknowledged]
    at = 0
    for number, save in enumerate(acknowledged, start=1):
        sent = leaves(save.sent)
        found = next((i for i in range(at, len(history)) if holds(history[i], sent)), None)
        if found is None:
            problems.append(f"{where}: acknowledged save {number} of {len(acknowledged)} "
                            f"{str(sent)[:200]} is not in the audit trail")
        else:
            at = found
    allowed: dict[str, list] = {}
    for save in saves:
        sent = leaves(save.sent)
        for path, value in sent.items():
            if save.acknowledged:
                allowed[path] = [value]
            else:
                allowed.setdefault(path, [ANY]).append(value)
        for path, value in sent.items():  # an accepted unit is the model's again: its modes,
            if not path.endswith(".verdict"):  # scene, shot and times as the caption has them
                continue
            unit = path[: -len("verdict")]
            for other in [p for p in allowed if p.startswith(unit) and p not in sent]:
                if not save.acknowledged:
                    allowed[other] = [ANY]
                elif value == "accept":
                    del allowed[other]
    for path, values in sorted(allowed.items()):
        if ANY not in values and stored.get(path) not in values:
            problems.append(f"{where}: {path} is stored as {str(stored.get(path))[:120]!r}, not as its "
                            f"annotator last sent it: {str(values[-1])[:120]!r}")
    return problems


def _replies(after: dict) -> dict[str, str]:
    return {item.get("unit"): item.get("reply") for item in after.get("replies") or []}


def _modes(sent: dict) -> list | None:
    return ((sent.get("changes") or {}).get("overview") or {}).get("modes")


# Whether an audit event holds what the person sent with the decision.
MATCHES = {
    "submit": lambda sent, after: all(_replies(after).get(u) == r for u, r in (sent.get("replies") or {}).items()),
    "amend": lambda sent, after: _modes(sent) is None or sorted(
        (after.get("overview") or {}).get("modes") or []) == sorted(_modes(sent)),
    "return": lambda sent, after: [(u.get("unit"), u.get("comment")) for u in after.get("units") or []]
    == [(u["unit"], u["comment"]) for u in sent.get("units") or []],
    "undo": lambda sent, after: after.get("undone") == sent.get("undone"),
}


def check_decisions(where: str, sent: list[tuple[str, Sent]], events: list[Event]) -> dict[str, list[str]]:
    """Each person's acknowledged decisions on one annotation (`sent`: person, Sent) against
    its audit trail: every one is there, with what was sent; none is there more often than it
    was sent (a retry applied twice)."""
    found: dict[str, list[str]] = {"decisions lost": [], "decisions written more often than sent": []}
    by_person: dict[tuple[str, str], list[Sent]] = defaultdict(list)
    for person, entry in sent:
        by_person[(person, entry.action)].append(entry)
    trail: dict[tuple[str, str], list[Event]] = defaultdict(list)
    for event in events:
        trail[(event.actor, event.action)].append(event)
    for (person, action), entries in sorted(by_person.items()):
        unused = list(trail.get((person, action), []))
        match = MATCHES.get(action, lambda sent, after: True)
        for entry in entries:
            if not entry.acknowledged:
                continue
            hit = next((e for e in unused if match(entry.sent, e.after)), None)
            if hit is None:
                found["decisions lost"].append(
                    f"{where}: {person}'s acknowledged {action} {str(entry.sent)[:160]} is not in the audit trail")
            else:
                unused.remove(hit)
        written = len(trail.get((person, action), []))
        if action != "claim" and written > len(entries):
            found["decisions written more often than sent"].append(
                f"{where}: {written} {action} by {person} in the audit trail, {len(entries)} sent")
    return found


def check_state(stored: Stored, sent: list[Sent]) -> list[str]:
    """The stored state and overview lock against the last thing anyone sent to the annotation,
    when it was acknowledged."""
    if not sent:
        return []
    last = max(sent, key=lambda entry: entry.at)
    if not last.acknowledged:
        return []
    name = f"undo {last.sent.get('undone')}" if last.action == "undo" else last.action
    problems = []
    if name in STATES_AFTER and stored.state not in STATES_AFTER[name]:
        problems.append(f"annotation {stored.pk}: {stored.state} stored after an acknowledged {name}, "
                        f"which leaves it {' or '.join(sorted(STATES_AFTER[name]))}")
    locked = {"lock_overview": True, "undo lock_overview": False}.get(name)
    if locked is not None and stored.locked != locked:
        problems.append(f"annotation {stored.pk}: the overview is {'' if stored.locked else 'not '}locked after "
                        f"an acknowledged {name}")
    return problems


def check_annotations(stored: list[Stored], events: dict[int, list[Event]], books: dict[str, list[Sent]],
                      claims: list[list], since: datetime | None = None) -> dict[str, list[str]]:
    """The database against the people's books: saves and decisions (check_saves,
    check_decisions, check_state); each audit trail replaying to the stored passes, state and
    overview lock; no item claimed by two reviewers at once (from the trail and from the
    reviewers' own answers). Events before `since` (the study as built) are not the people's."""
    found: dict[str, list[str]] = {"saves lost": [], "decisions lost": [],
                                   "decisions written more often than sent": [], "state differs from the ledger": [],
                                   "audit replay differs": [], "claimed twice": []}
    sent: dict[int, list[tuple[str, Sent]]] = defaultdict(list)
    for person, entries in books.items():
        for entry in entries:
            sent[entry.annotation].append((person, entry))
    for annotation in stored:
        trail = events.get(annotation.pk, [])
        replayed = replay(trail)
        where = f"annotation {annotation.pk}"
        if replayed["leaves"] != annotation.annotator:
            differs = {k: (annotation.annotator.get(k), replayed["leaves"].get(k))
                       for k in annotation.annotator.keys() | replayed["leaves"].keys()
                       if annotation.annotator.get(k) != replayed["leaves"].get(k)}
            found["audit replay differs"].append(f"{where}: annotator pass {str(differs)[:300]}")
        if replayed["state"] != annotation.state:
            found["audit replay differs"].append(f"{where}: state {replayed['state']} replayed, "
                                                 f"{annotation.state} stored")
        if replayed["locked"] != annotation.locked:
            found["audit replay differs"].append(f"{where}: overview lock {replayed['locked']} replayed")
        if annotation.qc is not None and leaves(replayed["qc"] or {}) != annotation.qc:
            found["audit replay differs"].append(f"{where}: QC pass differs from its last amend event")
        found["claimed twice"] += [f"{where}: {text}" for text in replayed["double"]]
        mine = sent.get(annotation.pk, [])
        saves = [entry for _person, entry in mine if entry.action == "save"]
        found["saves lost"] += check_saves(where, saves, replayed["after_saves"], annotation.annotator)
        recent = [e for e in trail if since is None or e.at >= since]
        for name, items in check_decisions(where, [(p, e) for p, e in mine if e.action != "save"], recent).items():
            found[name] += items
        found["state differs from the ledger"] += check_state(annotation, [entry for _p, entry in mine])
    found["claimed twice"] += check_claims(claims)
    return found


def check_claims(claims: list[list]) -> list[str]:
    """From the reviewers' answers: no claim answered while another reviewer's was unfinished."""
    found = []
    by_item = defaultdict(list)
    for pk, reviewer, started, ended in claims:
        by_item[pk].append((started, ended or float("inf"), reviewer))
    for pk, items in by_item.items():
        items.sort()
        for (s1, e1, r1), (s2, _e2, r2) in zip(items, items[1:], strict=False):
            if r1 != r2 and s2 < e1:
                found.append(f"annotation {pk}: {r2} was answered a claim at {s2:.3f} "
                             f"while {r1}'s claim from {s1:.3f} was not finished")
    return found


def read_annotations(slug: str) -> tuple[list[Stored], dict[int, list[Event]]]:
    """The study's annotations and audit trails, from the database."""
    from annotation.models import Annotation, AuditEvent, CorrectionPass
    from annotation.services.annotation_common import pass_snapshot

    stored = []
    annotations = list(Annotation.objects.filter(caption__clip__study__slug=slug).prefetch_related("passes"))
    for annotation in annotations:
        passes = {p.kind: p for p in annotation.passes.all()}
        qc = passes.get(CorrectionPass.Kind.QC)
        stored.append(Stored(annotation.pk, annotation.state, annotation.overview_locked_at is not None,
                             leaves(pass_snapshot(passes.get(CorrectionPass.Kind.ANNOTATOR))),
                             leaves(pass_snapshot(qc)) if qc is not None else None))
    events: dict[int, list[Event]] = defaultdict(list)
    for event in (AuditEvent.objects.filter(annotation__in=annotations).select_related("actor")
                  .order_by("at", "pk")):
        events[event.annotation_id].append(Event(event.annotation_id, event.action,
                                                 event.actor.username if event.actor else "", event.actor_id,
                                                 event.at, event.after or {}))
    return stored, events


def check_answers(requests: list[Request]) -> dict[str, list[str]]:
    """No 5xx other than a 503 with Retry-After, inside or outside the faults' windows."""
    wrong = []
    for request in requests:
        if request.status >= 500 and not (request.status == 503 and request.retry_after):
            wrong.append(f"{request.person}: {request.method} {request.path} {request.body[:200]!r} "
                         f"-> {request.status}{' without Retry-After' if request.status == 503 else ''} "
                         f"{request.answer[:200]!r} at {request.started:.3f}")
    return {"5xx other than 503 with Retry-After": wrong}


IDLE_SHARE = 0.05


def check_workload(requests: list[Request]) -> dict[str, list[str]]:
    """The annotators were kept busy: "nothing in your queue" (404) under 5 % of all requests."""
    idle = Counter(r.person for r in requests if r.status == 404 and r.path.endswith("/my-queue/next/"))
    total = len(requests)
    share = sum(idle.values()) / total if total else 1.0
    found = []
    if share >= IDLE_SHARE:
        found.append(f"{sum(idle.values())} of {total} requests ({share:.1%}) were answered \"nothing in your "
                     f"queue\" (goal: under {IDLE_SHARE:.0%}): {dict(idle)}")
    return {"annotators idle": found}


def check_disconnects(disconnects: Counter) -> dict[str, list[str]]:
    """The client-disconnect fault cut requests both mid-body and mid-response."""
    return {"disconnects not made": [f"no request was cut {where}" for where in ("mid-body", "mid-response")
                                     if not disconnects.get(where)]}


@dataclass
class Job:
    """A job the soak's people started (or a verdict started), as it ended."""

    kind: str  # caption import, scoring, scoring (final verdict), profile
    name: str
    state: str
    error: str = ""
    planted: bool = False  # the caption file the soak planted, naming a clip the study lacks
    asked: bool = True  # started by a person's request (not by a verdict)


def check_jobs(jobs: list[Job], asked: Counter) -> dict[str, list[str]]:
    """Every job ended done; only the planted import refused, naming the clip it lacks; a
    verdict's scoring may be cancelled (or failed, saying so) by the verdict's undo. No more jobs of a kind than the
    people asked for (a repeated request makes one job)."""
    not_done = []
    for job in jobs:
        if job.planted:
            if job.state not in ("refused", "failed") or PLANTED_CLIP not in job.error:
                not_done.append(f"{job.kind} job {job.name} (planted, naming an unknown clip): {job.state}, "
                                f"not refused naming the clip: {job.error[:200]!r}")
            continue
        if job.state == "done" or (job.kind == "scoring (final verdict)" and (
                job.state == "cancelled" or (job.state == "failed" and "undone" in job.error))):
            continue  # a verdict's scoring ends with the verdict's undo
        not_done.append(f"{job.kind} job {job.name}: {job.state}" + (f" ({job.error[:200]})" if job.error else ""))
    made = Counter(job.kind for job in jobs if job.asked)
    unasked = [f"{made[kind]} {kind} jobs in the database, {asked.get(kind, 0)} asked for"
               for kind in sorted(made) if made[kind] > asked.get(kind, 0)]
    return {"jobs not done": not_done, "jobs without a request": unasked}


def profile_statuses(media_root: Path, slug: str) -> dict[str, dict]:
    """Each profile export's status file (as scoring.profile_jobs keeps it), read without importing
    the export's heavy libraries here."""
    statuses = {}
    for path in sorted((media_root / "profiles" / slug).glob("*/status.json")):
        try:
            statuses[path.parent.name] = json.loads(path.read_text())
        except (OSError, ValueError):
            statuses[path.parent.name] = {"state": "unreadable"}
    return statuses


def profile_states(media_root: Path, slug: str) -> dict[str, str]:
    return {job: status.get("state", "unreadable") for job, status in profile_statuses(media_root, slug).items()}


def read_jobs(slug: str, since: datetime) -> list[Job]:
    """The study's jobs made since `since` (the people's start), as they ended, from the
    database and the profile folders."""
    from django.conf import settings

    from annotation.models import CaptionImportJob, Study
    from scoring.models import ScoreJob

    study = Study.objects.get(slug=slug)
    jobs = []
    for job in ScoreJob.objects.filter(study=study, created_at__gte=since).select_related("requested_by"):
        verdict = job.kind == "verdict" or job.requested_by is None
        jobs.append(Job("scoring (final verdict)" if verdict else "scoring", str(job.pk), job.status,
                        json.dumps(job.errors)[:300] if job.errors else "", asked=not verdict))
    for job in CaptionImportJob.objects.filter(study=study, created_at__gte=since):
        jobs.append(Job("caption import", str(job.pk), job.state, json.dumps(job.errors)[:500] if job.errors else "",
                        planted=job.file_name.startswith("planted-")))
    for name, status in profile_statuses(Path(settings.MEDIA_ROOT), slug).items():
        created = status.get("created_at") or ""
        if created and created[:19] < since.astimezone(UTC).isoformat()[:19]:
            continue
        jobs.append(Job("profile", name, status.get("state", "unreadable"), status.get("error") or ""))
    return jobs


def queued_jobs(slug: str, created_before: float | None = None) -> list[str]:
    """The scoring and caption import jobs queued now (created before a time, when given)."""
    from annotation.models import CaptionImportJob
    from scoring.models import ScoreJob

    before = {} if created_before is None else {
        "created_at__lt": datetime.fromtimestamp(created_before, tz=UTC)}
    return ([f"scoring job {pk}" for pk in ScoreJob.objects.filter(
                study__slug=slug, status="queued", **before).values_list("pk", flat=True)]
            + [f"caption import job {pk}" for pk in CaptionImportJob.objects.filter(
                study__slug=slug, state="queued", **before).values_list("pk", flat=True)])


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


def unfinished_asked(slug: str, kind: str) -> int:
    """How many jobs of `kind` that a person asked for are queued or running: "scoring" (study
    jobs asked by someone, not a verdict's), "profile"."""
    from django.conf import settings

    from scoring.models import ScoreJob

    if kind == "profile":
        return sum(1 for state in profile_states(Path(settings.MEDIA_ROOT), slug).values()
                   if state in ("queued", "running"))
    return ScoreJob.objects.filter(study__slug=slug, kind="study", requested_by__isnull=False,
                                   status__in=["queued", "running"]).count()


def job_progress(slug: str) -> tuple[list[str], tuple[int, int, int]]:
    """The jobs still running or queued, and a mark of progress that changes whenever a job
    ends, starts or counts more work done: (jobs unfinished, running, work counted)."""
    from django.conf import settings
    from django.db.models import Sum

    from scoring.models import ScoreChunk, ScoreJob

    left = running_jobs(slug)
    running = sum(1 for line in left if line.endswith("running"))
    work = (ScoreJob.objects.filter(study__slug=slug, status__in=["queued", "running"])
            .aggregate(done=Sum("progress_done"))["done"] or 0)
    work += ScoreChunk.objects.filter(job__study__slug=slug, status="done").count()
    work += sum(int(status.get("done") or 0) for status in profile_statuses(Path(settings.MEDIA_ROOT), slug).values()
                if status.get("state") in ("queued", "running"))
    return left, (len(left), running, work)


def failed_jobs(jobs: list[Job]) -> list[str]:
    """Every job that ended other than done, with its error (the planted import's refusal too)."""
    return [f"{job.kind} job {job.name}: {job.state}" + (" (planted)" if job.planted else "")
            + f": {job.error or '(no error recorded)'}"
            for job in jobs if job.state not in ("done", "queued", "running")]


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


def media_check_findings(output: str) -> list[str]:
    """The lines of `manage.py media_check`'s output that name a problem: a file without a row
    or a row without its file (its closing count line is not one)."""
    return [line for line in output.splitlines()
            if line.startswith(("file without a row:", "row without its file:"))]
