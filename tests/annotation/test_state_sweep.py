"""Every write to a study, in each of its four states: what the state allows is stored, what it
refuses answers 409 with the state's sentence and stores nothing.

The write routes come from the URL resolver (every API route and page that takes a POST, PUT,
PATCH or DELETE), so a route added later fails `test_every_write_route_is_in_the_table` until
WRITES says what it writes. The expected answer comes from one table, ALLOWED_IN, written here
independently of annotation.services.study_state. Each write is sent as the role that makes it
while the study runs; a digest of every table that holds the study's data (row counts and a
hash of their content) must not change where the state refuses.

The database's own refusals (migration 0026) are tested with SQL in
tests/annotation/test_state_triggers.py.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.test import Client

from annotation.models import Annotation, Caption, Study
from annotation.services.guidelines import guidelines_save
from annotation.services.lifecycle import study_archive, study_close, study_start
from annotation.services.members import invitation_create
from annotation.services.recruitment import recruitment_link_create
from annotation.services.studies import membership_grant, study_create
from annotation.services.workflow import annotation_open, annotations_assign
from tests.annotation.studybuild import SECRET_MODEL, caption_record, captions_add, complete, fake_clip
from tests.annotation.test_permissions_sweep import ROUTES, Route
from tests.profiles.fake_exports import an_export

pytestmark = pytest.mark.django_db

STATES = ("setup", "running", "closed", "archived")
WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")

# What each state allows, by kind of write (the README's lifecycle, item by item).
# Withdrawal is honoured in every state (ethics); its erasure in all but an archived study.
ALLOWED_IN = {
    "setup": {"settings", "content", "members", "assign", "gold", "scoring", "export", "withdraw", "erase"},
    "running": {"settings", "content", "members", "assign", "gold", "work", "recruit", "scoring", "export",
                "withdraw", "erase"},
    "closed": {"export", "withdraw", "erase"},
    "archived": {"export", "withdraw"},
}
# The refusal's sentence, per state: the same on every path.
REFUSAL = {
    "setup": "Study Study one is being set up: work opens when its admin starts it.",
    "closed": "Study Study one is closed: it can be read, exported, released and archived; nothing in it changes.",
    "archived": "Study Study one is archived: it can be read and exported; nothing in it changes.",
}


def jsonl(*records: dict) -> bytes:
    return "\n".join(json.dumps(r) for r in records).encode()


def upload(name: str, data: bytes) -> io.BytesIO:
    handle = io.BytesIO(data)
    handle.name = name
    return handle


@dataclass(frozen=True)
class Write:
    """One write: its kind, who sends it, what (a function of the world, called at send time),
    its URL parameters, and whether, where allowed, it must succeed (2xx or a redirect)."""

    kind: str
    persona: str
    body: Callable[[dict], Any] = lambda world: {}
    multipart: bool = False
    kwargs: dict[str, Callable[[dict], Any]] = field(default_factory=dict)
    stores: bool = False
    # Answers a state gives instead of the rule's, with why (none, where the rule is all).
    instead: dict[str, int] = field(default_factory=dict)


def annotation_of(name: str):
    return lambda world: world["annotations"][name].pk


def version_of(name: str):
    return lambda world: Annotation.objects.get(pk=world["annotations"][name].pk).version


SLUG = {"slug": lambda world: "s1"}
EDITS = itertools.count(1)  # each guideline write says something new, so that it stores
# In setup annotators and reviewers do not see the study's work at all: an annotation's routes
# answer 404 (annotation.api.workflow.get_annotation_for), stricter than the state's 409.
HIDDEN_IN_SETUP = {"setup": 404}
ON_FRESH, ON_STARTED, ON_SUBMITTED = (
    {"annotation_id": annotation_of(name)} for name in ("fresh", "started", "submitted"))

WRITES: dict[tuple[str, str], Write] = {
    # Settings (item 1 of issue 27: description and undo seconds of a closed study).
    ("api-study", "PATCH"): Write("settings", "admin", lambda w: {"description": "Changed.", "undo_seconds": 30},
                                  kwargs=SLUG, stores=True),
    # Guidelines: a settings-like write of the study's admins (in setup it replaces the draft).
    ("api-guidelines", "PUT"): Write("settings", "admin", lambda w: {"text": f"Rules {next(EDITS)}."},
                                     kwargs=SLUG, stores=True),
    ("api-guidelines", "POST"): Write("settings", "admin", lambda w: {"text": f"Rules {next(EDITS)}."},
                                      kwargs=SLUG, stores=True),
    # Dismissing the notice of a version read: a worker's write, as annotating is.
    ("api-guidelines-dismiss", "POST"): Write("work", "annotator", lambda w: {"version": 1}, kwargs=SLUG),
    # Consent: a settings-like write of the study's admins. The text written is blank (but new
    # each time, so that it stores): a study that asks for no consent lets the work below start.
    ("api-consent", "PUT"): Write("settings", "admin", lambda w: {"text": " " * next(EDITS)}, kwargs=SLUG,
                                  stores=True),
    # Accepting it: a worker's write (none is asked here: refused on content, 400, while running).
    ("api-consent-accept", "POST"): Write("work", "annotator", lambda w: {"version": 1}, kwargs=SLUG),
    ("study-consent", "POST"): Write("work", "annotator", lambda w: {"answer": "accept", "version": "1"},
                                     multipart=True, kwargs=SLUG),
    # Members and invitations.
    ("api-members", "POST"): Write("members", "admin", lambda w: {"username": "newcomer", "roles": ["reviewer"]},
                                   kwargs=SLUG, stores=True),
    ("api-member", "PATCH"): Write("members", "admin", lambda w: {"roles": ["annotator"]},
                                   kwargs={**SLUG, "username": lambda w: "helper"}, stores=True),
    ("api-member-deactivate", "POST"): Write("members", "admin",
                                             kwargs={**SLUG, "username": lambda w: "leaver"}, stores=True),
    ("api-invitations", "POST"): Write("members", "admin", lambda w: {"roles": ["annotator"], "note": "a lab"},
                                       kwargs=SLUG, stores=True),
    ("api-invitation-revoke", "POST"): Write("members", "admin",
                                             kwargs={**SLUG, "invitation_id": lambda w: w["invitation"].pk},
                                             stores=True),
    ("api-invitation-send", "POST"): Write("members", "admin", lambda w: {"email": "ana@example.org"},
                                           kwargs={**SLUG, "invitation_id": lambda w: w["mailed"].pk},
                                           stores=True),
    # Recruitment links: made and closed like invitations; joining through one only while running
    # (before the assign route below takes the last unassigned caption).
    ("api-recruitment-links", "POST"): Write("members", "admin", lambda w: {"cap": 5, "quota": 1}, kwargs=SLUG,
                                             stores=True),
    ("api-recruitment-link-close", "POST"): Write("members", "admin",
                                                  kwargs={**SLUG, "link_id": lambda w: w["link"].pk}, stores=True),
    ("recruitment", "POST"): Write("recruit", "guest", lambda w: {"PROLIFIC_PID": "5f2a9c8e1b3d4a6f7e8c9d01"},
                                   kwargs={"token": lambda w: w["recruit_token"]}, multipart=True, stores=True),
    # An invitation made before, accepted now (while running it makes a member; closed, nothing).
    ("invitation", "POST"): Write("members", "guest", lambda w: {"account": "guest"},
                                  kwargs={"token": lambda w: w["token"]}, multipart=True, stores=True),
    # Content.
    ("api-clip-upload", "POST"): Write("content", "admin", lambda w: {"file": upload("c.avi", w["video"])},
                                       multipart=True, kwargs=SLUG, stores=True),
    ("api-clip-properties", "POST"): Write(
        "content", "admin", lambda w: {"file": upload("p.csv", b"clip,manipulated\na,true\n")},
        multipart=True, kwargs=SLUG, stores=True),
    ("api-caption-import", "POST"): Write(
        "content", "admin", lambda w: {"file": upload("c.jsonl", jsonl(caption_record("b", "Imported-Model")))},
        multipart=True, kwargs=SLUG, stores=True),
    ("api-caption-import-jobs", "POST"): Write(
        "content", "admin", lambda w: {"file": upload("j.jsonl", jsonl(caption_record("a", "Job-Model")))},
        multipart=True, kwargs=SLUG, stores=True),
    ("api-reference-import", "POST"): Write(
        "content", "admin",
        lambda w: {"file": upload("r.jsonl", jsonl({"clip": "a", "text": "A card.", "source": "expert"}))},
        multipart=True, kwargs=SLUG, stores=True),
    # Assigning.
    ("api-assign", "POST"): Write("assign", "admin", lambda w: {"annotators": ["annotator"]}, kwargs=SLUG,
                                  stores=True),
    # Scoring.
    ("api-score-jobs", "POST"): Write("scoring", "admin", lambda w: {"metrics": ["bleu4"]}, kwargs=SLUG,
                                      stores=True),
    ("api-score-job-cancel", "POST"): Write("scoring", "admin",
                                            kwargs={**SLUG, "job_id": lambda w: w["score_job"].pk}, stores=True),
    ("api-scores-import", "POST"): Write(
        "scoring", "admin",
        lambda w: {"file": upload("s.jsonl", jsonl({"clip": "a", "model": SECRET_MODEL, "value": 1})),
                   "metric": "vlm_defects", "direction": "lower", "version": "1", "source": "judge"},
        multipart=True, kwargs=SLUG, stores=True),
    # Exports: files, the study's rows unchanged (checked); every state allows them.
    ("profile-jobs", "POST"): Write("export", "admin", lambda w: {"resamples": 10, "adjusted_resamples": 10},
                                    kwargs=SLUG),
    # Deleting a finished export: files, and its audit event (so it stores); every state allows it.
    ("profile-job", "DELETE"): Write("export", "admin", kwargs={
        **SLUG, "job": lambda w: an_export(w["study"], state="done", created_at="2026-01-01T00:00:00+00:00")},
        stores=True),
    # Work: annotating and reviewing.
    ("api-start-next", "POST"): Write("work", "annotator", kwargs=SLUG),
    ("api-review-next", "POST"): Write("work", "reviewer", kwargs=SLUG),
    ("api-open", "POST"): Write("work", "annotator", kwargs=ON_FRESH, instead=HIDDEN_IN_SETUP),
    ("api-annotation-draft", "PATCH"): Write(
        "work", "annotator",
        lambda w: {"base_version": version_of("started")(w), "changes": {"ui_state": {"unit": 1}}},
        kwargs=ON_STARTED),
    ("api-lock-overview", "POST"): Write("work", "annotator", lambda w: {"base_version": version_of("started")(w)},
                                        kwargs=ON_STARTED),
    ("api-submit", "POST"): Write("work", "annotator", lambda w: {"base_version": version_of("started")(w)},
                                  kwargs=ON_STARTED),
    ("api-undo", "POST"): Write("work", "annotator", kwargs=ON_SUBMITTED, instead=HIDDEN_IN_SETUP),
    ("api-claim", "POST"): Write("work", "reviewer", kwargs=ON_SUBMITTED, instead=HIDDEN_IN_SETUP),
    ("api-amend", "POST"): Write("work", "reviewer", lambda w: {"changes": {}},
                                 kwargs=ON_SUBMITTED, instead=HIDDEN_IN_SETUP),
    ("api-return", "POST"): Write("work", "reviewer",
                                  lambda w: {"units": [{"unit": "overview", "comment": "Look again."}]},
                                  kwargs=ON_SUBMITTED, instead=HIDDEN_IN_SETUP),
    ("api-approve", "POST"): Write("work", "reviewer", kwargs=ON_SUBMITTED, instead=HIDDEN_IN_SETUP),
    ("api-release", "POST"): Write("work", "reviewer", kwargs=ON_SUBMITTED, instead=HIDDEN_IN_SETUP),
    # Gold items, the practice set and qualification (gold verdicts are made as work is: the
    # import, which makes them through the workspace's services, only while the study runs).
    ("api-gold", "POST"): Write("gold", "admin", lambda w: {"caption": w["gold_caption"].pk}, kwargs=SLUG,
                                stores=True),
    ("api-gold-import", "POST"): Write(
        "work", "admin", lambda w: {"file": upload("g.jsonl", jsonl(GOLD_RECORD))}, multipart=True, kwargs=SLUG,
        stores=True),
    ("api-practice", "PATCH"): Write("gold", "admin", lambda w: {"gold_drift_threshold": 0.6}, kwargs=SLUG,
                                     stores=True),
    ("study-gold", "POST"): Write("gold", "admin", lambda w: {"action": "practice", **GOLD_FORM}, multipart=True,
                                  kwargs=SLUG, stores=True),
    ("api-qualification-retry", "POST"): Write("gold", "admin", kwargs={**SLUG, "username": lambda w: "annotator"},
                                               stores=True),
    # The workspace's Start button.
    ("workspace", "POST"): Write("work", "annotator", kwargs=ON_FRESH,
                                 multipart=True, instead=HIDDEN_IN_SETUP),
    # Withdrawal, last (a withdrawn annotator works no more): `quitter` withdraws and asks the
    # erasure through the API, `annotator` withdraws on the page.
    ("api-withdraw", "POST"): Write("erase", "quitter", lambda w: {"erase": True}, kwargs=SLUG, stores=True),
    ("withdraw", "POST"): Write("withdraw", "annotator", lambda w: {"confirm": "yes"}, multipart=True, kwargs=SLUG,
                                stores=True),
}
# A gold verdict on the caption that no one was assigned, in the bundle's annotation format.
GOLD_RECORD = {"clip": "a", "model": "Late", "passes": {"annotator": {
    "overview": {"verdict": "accept", "text": "", "modes": []},
    "windows": [{"index": i, "verdict": "accept", "scene": "", "shot": "", "start": 2 * i, "end": 2 * i + 2,
                 "modes": []} for i in range(3)],
    "segmentation": {"verdict": "accept", "modes": [], "windows": []}}}}
# The gold page's practice form: the defaults, with another drift threshold.
GOLD_FORM = {"practice_min_items": "5", "practice_min_overview_agreement": "0.8", "practice_min_mode_f1": "0.5",
             "practice_min_window_agreement": "0.7", "gold_rate": "0", "gold_drift_threshold": "0.55"}
# The study's own moves: each from one state only (annotation.services.lifecycle), 409 elsewhere.
MOVES = {
    ("api-study-start", "POST"): "setup",
    ("api-study-close", "POST"): "running",
    ("api-study-archive", "POST"): "closed",
}
# Write routes that write nothing of an existing study, with why.
NOT_STUDY_WRITES = {
    ("login", "POST"): "signing in",
    ("login", "PUT"): "signing in (Django's LoginView treats PUT as POST)",
    ("logout", "POST"): "signing out",
    ("api-studies", "POST"): "creates a new study, in setup",
    ("api-edit-size", "POST"): "computes an edit's size; stores nothing",
}


def write_routes() -> dict[tuple[str, str], Route]:
    return {(r.key, m): r for r in ROUTES if not r.admin for m in r.methods if m in WRITE_METHODS}


def test_every_write_route_is_in_the_table():
    known = set(WRITES) | set(MOVES) | set(NOT_STUDY_WRITES)
    missing = sorted(f"{key} {method}" for key, method in write_routes() if (key, method) not in known)
    assert not missing, "Write routes the state sweep does not know: " + ", ".join(missing)
    stale = sorted(f"{key} {method}" for key, method in known if (key, method) not in write_routes())
    assert not stale, "Entries without a route: " + ", ".join(stale)


def test_every_write_of_the_api_schema_is_in_the_table():
    """The OpenAPI schema's write operations are the API's write routes, all in the table."""
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    operations = {(path, method.upper()) for path, item in schema["paths"].items() for method in item
                  if method.upper() in WRITE_METHODS}
    routed = {}
    for (key, method), route in write_routes().items():
        path = "/" + route.pattern
        for name in route.kwargs:
            path = path.replace(f"<slug:{name}>", f"{{{name}}}").replace(f"<int:{name}>", f"{{{name}}}")
            path = path.replace(f"<str:{name}>", f"{{{name}}}")
        routed[(path, method)] = key
    unknown = sorted(f"{method} {path}" for path, method in operations if (path, method) not in routed)
    assert not unknown, "Schema operations without a route in the sweep: " + ", ".join(unknown)
    assert len(operations) >= 30


# --------------------------------------------------------------------------- the world


def study_digest() -> dict[str, str]:
    """Each table that holds a study's data: its row count and a hash of its rows."""
    digest = {}
    for label in ("annotation.Study", "annotation.Membership", "annotation.Invitation", "annotation.Clip",
                  "annotation.CandidateModel", "annotation.Caption", "annotation.Window", "annotation.Reference",
                  "annotation.CaptionImportJob", "annotation.Annotation", "annotation.CorrectionPass",
                  "annotation.WindowCorrection", "annotation.AuditEvent", "annotation.GoldItem",
                  "annotation.Qualification", "annotation.RecruitmentLink", "annotation.Participant",
                  "annotation.GuidelineVersion", "annotation.GuidelineNotice", "annotation.Withdrawal",
                  "scoring.ScoreJob", "scoring.ScoreChunk",
                  "scoring.ScoreResult", "scoring.ExternalScore"):
        rows = list(apps.get_model(label).objects.order_by("pk").values_list())
        digest[label] = f"{len(rows)}:{hashlib.sha256(repr(rows).encode()).hexdigest()[:16]}"
    digest["users"] = str(get_user_model().objects.count())
    return digest


@pytest.fixture
def world(make_user, clip_files):
    """Study s1 in setup: two clips, two models' captions assigned to `annotator`, members for
    every role (plus `helper` and `leaver`, reviewers whose roles change), an open invitation to
    revoke and one to accept (by `guest`), a queued score job."""
    from scoring.services import score_job_create

    people = {name: make_user(name) for name in
              ("admin", "annotator", "reviewer", "researcher", "helper", "leaver", "newcomer", "guest", "quitter")}
    study = study_create(slug="s1", name="Study one", state="setup")
    for role in ("admin", "annotator", "reviewer", "researcher"):
        membership_grant(study=study, user=people[role], role=role)
    for name in ("helper", "leaver"):
        membership_grant(study=study, user=people[name], role="reviewer")
    membership_grant(study=study, user=people["quitter"], role="annotator")
    fake_clip(study, "a")
    fake_clip(study, "b")
    captions_add(study, [caption_record(clip, model) for clip in ("a", "b") for model in (SECRET_MODEL, "Other")])
    annotations_assign(study=study, annotators=[people["annotator"]], design="clip_blocks")
    captions_add(study, [caption_record("a", "Late")])  # left for the assign route
    mine = Annotation.objects.filter(annotator=people["annotator"]).order_by("pk")
    # A failed practice attempt, for the admin's retry.
    apps.get_model("annotation.Qualification").objects.create(
        study=study, user=people["annotator"], state="failed", attempts=1, attempts_allowed=1)
    return {
        "gold_caption": Caption.objects.get(clip__name="b", model__name="Other"),
        "study": study,
        "people": people,
        "annotations": {"fresh": mine[0], "started": mine[1], "submitted": mine[2]},
        "invitation": invitation_create(study=study, actor=people["admin"], roles=["reviewer"])[0],
        "token": invitation_create(study=study, actor=people["admin"], roles=["reviewer"])[1],
        "link": recruitment_link_create(study=study, actor=people["admin"], cap=5, quota=1)[0],
        "recruit_token": recruitment_link_create(study=study, actor=people["admin"], cap=5, quota=1)[1],
        "mailed": invitation_create(study=study, actor=people["admin"], roles=["annotator"],
                                    email="ana@exmaple.org")[0],
        "score_job": score_job_create(study=study, metrics=["bleu4"], enqueue=False),
        "guidelines": guidelines_save(study=study, actor=people["admin"], text="Rules.")[0],
        "video": clip_files["c"].read_bytes(),
    }


def move_to(world: dict, state: str) -> None:
    """Move the world's study to `state` through the services, with work in every stage."""
    study, people = world["study"], world["people"]
    if state == "setup":
        return
    # The world has a caption that no annotator was assigned: starting with it is confirmed, as
    # the study page asks.
    study_start(study=study, actor=people["admin"], confirm=True)
    annotation_open(annotation=world["annotations"]["started"], actor=people["annotator"])
    complete(world["annotations"]["submitted"], people["annotator"])
    if state == "running":
        return
    study_close(study=study, actor=people["admin"], confirm=True)
    if state == "archived":
        study_archive(study=study, actor=people["admin"])


def send(client: Client, route: Route, method: str, write: Write, world: dict):
    from django.urls import reverse

    url = reverse(route.key, kwargs={name: make(world) for name, make in write.kwargs.items()})
    body = write.body(world)
    if write.multipart:
        return getattr(client, method.lower())(url, body)
    return getattr(client, method.lower())(url, json.dumps(body), content_type="application/json")


def detail_of(response) -> tuple[str, str | None]:
    """The answer's sentence, and the state a JSON refusal names (None for a page)."""
    if response.get("Content-Type", "").startswith("application/json"):
        return response.json().get("detail", ""), response.json().get("state", "")
    return response.content.decode(), None


@pytest.mark.parametrize("state", STATES)
def test_each_state_takes_what_it_allows_and_refuses_the_rest_storing_nothing(world, state):
    move_to(world, state)
    assert Study.objects.get(pk=world["study"].pk).state == state
    routes = write_routes()
    client = Client()
    wrong = []
    for (key, method), write in WRITES.items():
        client.force_login(world["people"][write.persona])
        before = study_digest()
        response = send(client, routes[(key, method)], method, write, world)
        after = study_digest()
        status, (detail, named) = response.status_code, detail_of(response)
        refused = status == 409 and state in REFUSAL and REFUSAL[state] in detail and named in (None, state)
        where = f"{method} {key} in {state} as {write.persona}: {status} {detail[:200]!r}"
        if state in write.instead:
            if status != write.instead[state] or after != before:
                wrong.append(f"{where} (expected {write.instead[state]}, nothing stored)")
        elif write.kind in ALLOWED_IN[state]:
            if refused or status >= 500 or status in (401, 403, 404):
                wrong.append(f"{where} (expected the state to allow it)")
            elif write.stores and (status >= 400 or after == before):
                wrong.append(f"{where} (expected it stored)")
            elif write.kind == "export" and not write.stores and (status >= 400 or after != before):
                wrong.append(f"{where} (expected it done, the study's rows unchanged)")
        elif not refused:
            wrong.append(f"{where} (expected 409 naming the state)")
        elif after != before:
            changed = [name for name in after if after[name] != before[name]]
            wrong.append(f"{where} (refused, yet changed {', '.join(changed)})")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("state", STATES)
def test_a_move_from_another_state_is_refused_and_changes_nothing(world, state):
    move_to(world, state)
    client = Client()
    client.force_login(world["people"]["admin"])
    for (key, _), source in MOVES.items():
        if source == state:
            continue  # tests/annotation/test_lifecycle.py makes the moves
        before = study_digest()
        answer = client.post(f"/api/studies/s1/{key.removeprefix('api-study-')}/", {"confirm": True},
                             content_type="application/json")
        assert answer.status_code == 409, (key, state, answer.content)
        assert study_digest() == before
