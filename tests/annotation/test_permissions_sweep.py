"""Every URL and API endpoint, against every role, an anonymous user and a member of another study.

The routes come from the URL resolver, so a new route is swept as soon as it exists; the
expectations come from EXPECTED below, keyed by URL name (and HTTP method), so a new route
or method without an entry fails `test_every_route_and_method_has_an_expectation`.

Each request ends in one of three outcomes:
- "in": served (2xx), or past the gate and refused on content or state (400, 405, 409, 415);
- "redirect": sent to another page that is not a login page;
- "out": 401, 403, 404, or sent to log in (a login page with ?next=, or the admin's index).
An entry lists who gets "in" and who gets "redirect"; everyone else must get "out", exactly.

Besides, no response to a persona who may not see model identity (annotator, QC reviewer,
outsider, anonymous) may contain a candidate model's real name; the outsider (a member of
another study) gets 404, never 403, so that no answer tells which studies exist; and pages answer
the methods they do not serve with 405.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth.models import Permission
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, resolve, reverse

from annotation.models import Annotation, Clip, Reference
from annotation.services.guidelines import guidelines_save
from annotation.services.workflow import annotations_assign, review_approve, review_claim
from tests.annotation.studybuild import (
    SECRET_MODEL,
    caption_record,
    captions_add,
    complete,
    fake_clip,
)
from tests.conftest import in_setup

pytestmark = pytest.mark.django_db

OTHER_SECRET_MODEL = "Quokka-Vision-2"
PERSONAS = ("anonymous", "admin", "annotator", "reviewer", "researcher", "outsider")
ANYONE = frozenset(PERSONAS)
SIGNED_IN = ANYONE - {"anonymous"}
MEMBERS = frozenset({"admin", "annotator", "reviewer", "researcher"})
ADMINS = frozenset({"admin"})
# The annotation swept belongs to "annotator"; reviewers, admins and researchers may read it.
OWNER = frozenset({"annotator"})
READERS = frozenset({"annotator", "reviewer", "admin", "researcher"})
QC = frozenset({"reviewer"})
QC_AND_ADMINS = frozenset({"reviewer", "admin"})
SEE_SCORES = frozenset({"admin", "researcher"})
PEOPLE_READERS = frozenset({"admin", "researcher"})
# The sweep's admin and outsider also hold the "may create studies" permission (annotation.add_study).
CREATORS = frozenset({"admin", "outsider"})
NOBODY: frozenset[str] = frozenset()
BLIND = frozenset({"anonymous", "annotator", "reviewer", "outsider"})
# A caption of clip b assigned to nobody, and the marks of a manipulated control: annotators
# and (blind) QC reviewers see neither, study admins and researchers see both.
UNSEEN_WORD = "zeppelin"
CONTROL_MARKS = ('"manipulated"', "manipulated control", ">manipulated<")


@dataclass(frozen=True)
class Expect:
    """Who gets in (and who is redirected) for one route and method; `body` is what is sent."""

    allowed: frozenset[str]
    redirected: frozenset[str] = NOBODY
    body: Any = None
    json: bool = True


def api_post(allowed, body=None, json=True):
    return Expect(frozenset(allowed), body=body if body is not None else {}, json=json)


UPLOAD = dict(body={}, json=False)  # multipart without a file: 400 once past the gate

EXPECTED: dict[str, dict[str, Expect]] = {
    # Pages.
    "home": {"GET": Expect(SIGNED_IN)},
    "login": {
        "GET": Expect(ANYONE),
        "POST": Expect(ANYONE, body={"username": "x", "password": "y"}, json=False),
        "PUT": Expect(ANYONE),  # Django's LoginView treats PUT as POST
    },
    "logout": {"POST": Expect(NOBODY, redirected=ANYONE, body={}, json=False)},
    "study": {"GET": Expect(MEMBERS)},
    # Setting a study up (tests/annotation/test_study_setup.py covers site admins' read-only access).
    "study-new": {"GET": Expect(CREATORS)},
    "study-settings": {"GET": Expect(ADMINS)},
    "study-members": {"GET": Expect(ADMINS)},
    "study-history": {"GET": Expect(ADMINS)},
    # The participants' platform ids: the study's admins only (site admins without the role too are out).
    "study-payments": {"GET": Expect(ADMINS)},
    "study-guidelines": {"GET": Expect(ADMINS)},
    # The consent page: each member's own (accepting here when the study asks for none: 400).
    "study-consent": {"GET": Expect(MEMBERS), "POST": Expect(MEMBERS, body={"answer": "accept"}, json=False)},
    # Anyone holding a valid link sees the invitation; a POST without an account chosen is refused
    # on content (400).
    "invitation": {"GET": Expect(ANYONE), "POST": Expect(ANYONE, body={}, json=False)},
    # Anyone holding a recruitment link sees its page; without a participant id it is refused on
    # content (400), GET and POST alike. The completion page is a participant's only (none here).
    "recruitment": {"GET": Expect(ANYONE), "POST": Expect(ANYONE, body={}, json=False)},
    "participant-done": {"GET": Expect(NOBODY)},
    "clip": {"GET": Expect(MEMBERS)},
    "clip-video": {"GET": Expect(MEMBERS)},
    "clip-poster": {"GET": Expect(MEMBERS)},
    # Every member has a queue page; it lists only the member's own assignments.
    "annotator-queue": {"GET": Expect(MEMBERS)},
    # The workspace is the annotator's; those who may read the annotation go to its review page.
    # Looking changes nothing; a POST starts the work (the owner goes back to the page).
    "workspace": {
        "GET": Expect(OWNER, redirected=READERS - OWNER),
        "POST": Expect(NOBODY, redirected=READERS, body={}, json=False),
    },
    "review-queue": {"GET": Expect(QC_AND_ADMINS)},
    "review": {"GET": Expect(QC_AND_ADMINS)},
    "progress": {"GET": Expect(ADMINS)},
    "progress-agreement": {"GET": Expect(ADMINS)},
    # The API's description holds no data.
    "schema": {"GET": Expect(ANYONE)},
    "api-docs": {"GET": Expect(ANYONE)},
    # Studies, clips, models and captions.
    "api-studies": {"GET": Expect(SIGNED_IN), "POST": api_post(CREATORS)},  # each lists only their own
    "api-slug-check": {"GET": Expect(CREATORS)},
    "api-taxonomies": {"GET": Expect(SIGNED_IN)},  # the definitions are no study's data
    "api-study": {"GET": Expect(MEMBERS), "PATCH": api_post(ADMINS)},
    "api-members": {"GET": Expect(ADMINS), "POST": api_post(ADMINS)},
    "api-member": {"PATCH": api_post(ADMINS, {"roles": ["annotator"]})},
    "api-member-deactivate": {"POST": api_post(ADMINS)},
    "api-invitations": {"GET": Expect(ADMINS), "POST": api_post(ADMINS)},
    "api-invitation-revoke": {"POST": api_post(ADMINS)},
    # The swept invitation has no e-mail address: past the gate, refused on content (400).
    "api-invitation-send": {"POST": api_post(ADMINS)},
    "api-study-history": {"GET": Expect(ADMINS)},
    # Recruitment links: a study admin's; the swept POST lacks the cap (400 once past the gate).
    "api-recruitment-links": {"GET": Expect(ADMINS), "POST": api_post(ADMINS)},
    "api-recruitment-link-close": {"POST": api_post(ADMINS)},
    "api-participants": {"GET": Expect(ADMINS)},
    # Paying participants: study admins only; the bonus without a rate is refused on content (400).
    "api-payments": {"GET": Expect(ADMINS)},
    "api-payments-csv": {"GET": Expect(ADMINS)},
    "api-payments-bonus": {"GET": Expect(ADMINS)},
    "api-payments-bonus-file": {"GET": Expect(ADMINS)},
    # Withdrawal: each member sees whether they withdrew; only an annotator withdraws (the others
    # are refused by the service, 403). The page refuses a POST without its confirmation (400)
    # to any member. The admins list the withdrawals.
    "api-withdraw": {"GET": Expect(MEMBERS), "POST": api_post(OWNER)},
    "api-withdrawals": {"GET": Expect(ADMINS)},
    "withdraw": {"GET": Expect(MEMBERS), "POST": Expect(MEMBERS, body={}, json=False)},
    # Guidelines: every member reads them (annotators too, before work opens); study admins
    # write them; each person dismisses their own notice (a version that does not exist: 400).
    "api-guidelines": {"GET": Expect(MEMBERS), "PUT": api_post(ADMINS, {"text": "Read me."}),
                       "POST": api_post(ADMINS, {"text": "Read me."})},
    "api-guideline-version": {"GET": Expect(MEMBERS)},
    "api-guidelines-diff": {"GET": Expect(MEMBERS)},
    "api-guidelines-dismiss": {"POST": api_post(MEMBERS, {"version": 1})},
    # Consent: every member reads it and accepts it for themselves (none asked here: 400); study
    # admins write it.
    "api-consent": {"GET": Expect(MEMBERS), "PUT": api_post(ADMINS, {"text": "Do you agree?"})},
    "api-consent-accept": {"POST": api_post(MEMBERS, {"version": 1})},
    "api-clips": {"GET": Expect(MEMBERS)},
    "api-models": {"GET": Expect(MEMBERS)},
    "api-captions": {"GET": Expect(MEMBERS)},
    "api-clip-upload": {"POST": Expect(ADMINS, **UPLOAD)},
    "api-clip-properties": {"POST": Expect(ADMINS, **UPLOAD)},
    "api-caption-import": {"POST": Expect(ADMINS, **UPLOAD)},
    "api-caption-import-jobs": {"GET": Expect(ADMINS), "POST": Expect(ADMINS, **UPLOAD)},
    "api-caption-import-job": {"GET": Expect(ADMINS)},
    "api-reference-import": {"POST": Expect(ADMINS, **UPLOAD)},
    # The workflow.
    "api-my-queue": {"GET": Expect(MEMBERS)},  # the caller's own items only
    "api-start-next": {"POST": api_post(OWNER)},
    "api-review-queue": {"GET": Expect(QC_AND_ADMINS)},
    "api-review-next": {"POST": api_post(QC)},
    "api-assign": {"POST": api_post(ADMINS, {"annotators": ["annotator"]})},
    "api-annotation": {"GET": Expect(READERS)},
    "api-open": {"POST": api_post(OWNER)},
    "api-annotation-draft": {"PATCH": api_post(OWNER, {"base_version": 1, "changes": {}})},
    "api-lock-overview": {"POST": api_post(OWNER, {"base_version": 1})},
    "api-submit": {"POST": api_post(OWNER, {"base_version": 1})},
    # Only who took a decision undoes it: the annotator submitted the swept annotation (its
    # window has passed: 409 for them); the reviewer is refused, others never get that far.
    "api-undo": {"POST": api_post(OWNER)},
    "api-audit": {"GET": Expect(READERS)},
    "api-claim": {"POST": api_post(QC)},
    "api-release": {"POST": api_post(QC)},
    "api-approve": {"POST": api_post(QC)},
    "api-amend": {"POST": api_post(QC, {"changes": {}})},
    "api-return": {
        "POST": api_post(QC, {"units": [{"unit": "overview", "comment": "Look again."}]})
    },
    "api-edit-size": {
        "POST": api_post(MEMBERS, {"study": "s1", "original": "a red car", "corrected": "a blue car"})
    },
    # The failure profile and corrected captions name the models: admins and researchers only.
    "profiles": {"GET": Expect(SEE_SCORES)},
    "profile-jobs": {"POST": api_post(SEE_SCORES, {"resamples": 10, "adjusted_resamples": 10})},
    # Deleting the swept export, which is still queued: 409 for who may delete it.
    "profile-job": {"GET": Expect(SEE_SCORES), "DELETE": Expect(SEE_SCORES)},
    "profile-job-file": {"GET": Expect(SEE_SCORES)},
    "corrected-jsonl": {"GET": Expect(SEE_SCORES)},
    "profile-llmfacts": {"GET": Expect(SEE_SCORES)},
    "corrected-vtt": {"GET": Expect(SEE_SCORES)},
    # Scoring: scores name the models, so admins and researchers only.
    "api-score-jobs": {"GET": Expect(SEE_SCORES), "POST": api_post(SEE_SCORES, {"metrics": 5})},
    "api-score-job": {"GET": Expect(SEE_SCORES)},
    "api-score-job-cancel": {"POST": api_post(ADMINS)},
    "api-scores": {"GET": Expect(SEE_SCORES)},
    "api-scores-import": {"POST": Expect(ADMINS, **UPLOAD)},
    "api-score-summary": {"GET": Expect(SEE_SCORES)},
    # The lifecycle: study admins only. The swept study runs: start and archive answer 409, a
    # close without confirm 400 (what is unfinished); nothing moves.
    "api-study-lifecycle": {"GET": Expect(ADMINS)},
    "api-study-start": {"POST": api_post(ADMINS)},
    "api-study-close": {"POST": api_post(ADMINS)},
    "api-study-archive": {"POST": api_post(ADMINS)},
    # Gold verdicts, the practice set and qualification: study admins (and gold experts, who are
    # not among the sweep's personas); one's own practice, any member; a practice item's feedback,
    # its annotator and the study's admins.
    "api-gold": {"GET": Expect(ADMINS), "POST": api_post(ADMINS)},
    "study-gold": {"GET": Expect(ADMINS), "POST": Expect(ADMINS, body={"action": "nothing"}, json=False)},
    "api-gold-import": {"POST": Expect(ADMINS, **UPLOAD)},
    "api-practice": {"GET": Expect(ADMINS), "PATCH": api_post(ADMINS)},
    "api-practice-mine": {"GET": Expect(MEMBERS)},
    "api-qualifications": {"GET": Expect(ADMINS)},
    "api-qualification-retry": {"POST": api_post(ADMINS)},
    "api-practice-feedback": {"GET": Expect(OWNER | ADMINS)},
    # The data release: admins and researchers (people appear as pseudonyms only).
    "study-release": {"GET": Expect(SEE_SCORES)},
    # How the people worked (the annotator quality page, its CSV, the work log): admins by name,
    # researchers by pseudonym.
    "annotator-quality": {"GET": Expect(PEOPLE_READERS)},
    "annotator-quality-csv": {"GET": Expect(PEOPLE_READERS)},
    "work-log": {"GET": Expect(PEOPLE_READERS)},
    "api-annotator-quality": {"GET": Expect(PEOPLE_READERS)},
    "api-work-log": {"GET": Expect(PEOPLE_READERS)},
}
# The Django admin site is for site staff; no study role opens it. Its routes are generated per
# registered model, so they share one entry: every route (named or not) is closed to all
# personas except the admin's login page.
ADMIN_OPEN = {"admin:login": Expect(ANYONE)}
ADMIN_CLOSED = Expect(NOBODY)

METHODS = ("get", "post", "put", "patch", "delete")


@dataclass(frozen=True)
class Route:
    key: str  # the URL name ("admin:..." inside the admin), or the pattern for an unnamed route
    pattern: str
    methods: tuple[str, ...]
    kwargs: tuple[str, ...]
    admin: bool


def _walk(patterns, prefix="", namespace=""):
    for entry in patterns:
        if isinstance(entry, URLResolver):
            inner = ":".join(part for part in (namespace, entry.namespace) if part)
            yield from _walk(entry.url_patterns, prefix + str(entry.pattern), inner)
        elif isinstance(entry, URLPattern):
            yield prefix + str(entry.pattern), namespace, entry


def _methods(callback, admin: bool) -> tuple[str, ...]:
    if admin:
        return ("GET",)
    view = getattr(callback, "view_class", None) or getattr(callback, "cls", None)
    if view is None:
        return _function_methods(callback)
    allowed = [m for m in METHODS if m in view.http_method_names and hasattr(view, m)]
    return tuple(m.upper() for m in allowed)


def _function_methods(callback) -> tuple[str, ...]:
    """The methods a function view's @require_http_methods (require_GET, require_POST...) allows;
    GET for an undecorated page."""
    function = callback
    while function is not None:
        cells = zip(function.__code__.co_freevars, function.__closure__ or (), strict=False)
        for name, cell in cells:
            if name == "request_method_list":
                return tuple(m.upper() for m in cell.cell_contents if m.lower() in METHODS)
        function = getattr(function, "__wrapped__", None)
    return ("GET",)


def discover_routes() -> list[Route]:
    routes = []
    for pattern, namespace, entry in _walk(get_resolver().url_patterns):
        admin = namespace == "admin"
        key = f"{namespace}:{entry.name}" if namespace and entry.name else entry.name or pattern
        routes.append(
            Route(
                key=key,
                pattern=pattern,
                methods=_methods(entry.callback, admin),
                kwargs=tuple(entry.pattern.regex.groupindex),
                admin=admin,
            )
        )
    return routes


ROUTES = discover_routes()


def expectation(route: Route, method: str) -> Expect | None:
    if route.admin:
        return ADMIN_OPEN.get(route.key, ADMIN_CLOSED)
    return EXPECTED.get(route.key, {}).get(method)


def test_every_route_and_method_has_an_expectation():
    missing = [
        f"{r.key} {m} ({r.pattern})" for r in ROUTES for m in r.methods if expectation(r, m) is None
    ]
    assert not missing, "Routes without an entry in EXPECTED: " + "; ".join(missing)


def test_every_expectation_names_a_route_that_exists():
    swept = {(r.key, m) for r in ROUTES if not r.admin for m in r.methods}
    stale = [
        f"{key} {method}"
        for key, methods in EXPECTED.items()
        for method in methods
        if (key, method) not in swept
    ]
    assert not stale, "Entries of EXPECTED without a route: " + ", ".join(stale)


def test_the_sweep_covers_the_admin_site_and_every_api_endpoint():
    keys = {r.key for r in ROUTES}
    assert {"admin:index", "api-annotation", "api-claim", "progress", "workspace", "review"} <= keys
    assert sum(1 for r in ROUTES if r.pattern.startswith("api/")) >= 30


# --------------------------------------------------------------------------- the world


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def world(study, other_study, personas):
    """Study s1 with its four roles; `outsider` is an admin of s2.

    annotator holds a submitted annotation (swept by the annotation routes), a new one (so that
    "start next" has something to open) and an approved one (so that there are final verdicts).
    """
    clip = fake_clip(study, "b")
    fake_clip(study, "a")
    fake_clip(other_study, "b")
    captions_add(
        study,
        [
            caption_record("b", SECRET_MODEL),
            caption_record("b", OTHER_SECRET_MODEL),
            caption_record("a", SECRET_MODEL),
        ],
    )
    Reference.objects.create(clip=clip, source="expert", text="A test card.", text_sha256="0" * 64)
    with in_setup(study):
        annotations_assign(study=study, annotators=[personas["annotator"]], design="clip_blocks")
    captions_add(study, [caption_record("b", "Unseen-Model", words=UNSEEN_WORD)])
    Clip.objects.filter(pk=clip.pk).update(manipulated=True)
    mine = Annotation.objects.filter(
        annotator=personas["annotator"], caption__model__name=SECRET_MODEL
    )
    submitted = complete(mine.get(caption__clip__name="b"), personas["annotator"])
    final = complete(mine.get(caption__clip__name="a"), personas["annotator"])
    review_claim(annotation_id=final.pk, actor=personas["reviewer"])
    review_approve(annotation_id=final.pk, actor=personas["reviewer"])
    guidelines_save(study=study, actor=personas["admin"], text="Watch each clip to the end.")
    may_create = Permission.objects.get(codename="add_study", content_type__app_label="annotation")
    for persona in CREATORS:
        personas[persona].user_permissions.add(may_create)
    return {
        "study": study,
        "clip": clip,
        "annotation": submitted,
        "personas": personas,
        "model": study.candidate_models.get(name=SECRET_MODEL),
    }


def _score_job_id(world) -> int:
    from django.apps import apps

    job_model = apps.get_model("scoring", "ScoreJob")
    return job_model.objects.create(
        study=world["study"], kind="study", requested_by=world["personas"]["admin"]
    ).pk


def _profile_job(world, *, finished: bool) -> str:
    """A profile export job; a finished one (faked: its task never runs in a test) has one file."""
    import json

    from scoring import profile_jobs

    status = profile_jobs.profile_job_create(
        study=world["study"], requested_by="admin", resamples=10, adjusted_resamples=10
    )
    if finished:
        folder = profile_jobs.job_dir(world["study"], status["job"])
        (folder / "files").mkdir()
        (folder / "files" / "table.csv").write_text("model,rate\n")
        (folder / "profile.zip").write_bytes(b"PK")
        status.update(state=profile_jobs.DONE, files=["table.csv"], zip="profile.zip")
        (folder / "status.json").write_text(json.dumps(status))
    return status["job"]


def _llmfacts_result_id(world) -> int:
    """A stored LLMFactsF1 of the approved overview, with its facts."""
    from django.apps import apps
    from django.utils import timezone

    result_model = apps.get_model("scoring", "ScoreResult")
    final = Annotation.objects.get(state="approved")
    return result_model.objects.create(
        study=world["study"], caption=final.caption, annotation=final, subject="overview",
        item_key=f"annotation:{final.pk}:overview", metric="llmfacts_f1",
        judge_or_backend="llm", metric_version="llmfacts-v1+constrained", value=1.0,
        detail={"a_to_b": {"checks": []}, "b_to_a": {"checks": []}, "scores": {}},
        computed_at=timezone.now(),
    ).pk


def _invitation_id(world) -> int:
    from annotation.services.members import invitation_create

    return invitation_create(study=world["study"], actor=world["personas"]["admin"], roles=["annotator"])[0].pk


def _invitation_token(world) -> str:
    from annotation.services.members import invitation_create

    return invitation_create(study=world["study"], actor=world["personas"]["admin"], roles=["reviewer"])[1]


def _practice_annotation_id(world) -> int:
    """The annotator's submitted practice attempt at a gold item the admin made (clip b's caption
    by the other model; a second attempt, beside the annotator's work on that caption)."""
    from annotation.models import Caption
    from annotation.services.gold import gold_start

    admin, annotator = world["personas"]["admin"], world["personas"]["annotator"]
    caption = Caption.objects.get(clip=world["clip"], model__name=OTHER_SECRET_MODEL)
    item = gold_start(study=world["study"], actor=admin, caption_id=caption.pk)
    complete(item.gold, admin)
    practice = Annotation.objects.create(caption=caption, annotator=annotator, taxonomy=world["study"].taxonomy,
                                         purpose="practice", attempt=2)
    return complete(practice, annotator).pk


def _recruitment_link(world):
    from annotation.services.recruitment import recruitment_link_create

    return recruitment_link_create(study=world["study"], actor=world["personas"]["admin"], cap=5, quota=1)


def _caption_import_job_id(world) -> int:
    """A caption import job of the study, queued (its task never runs in the sweep)."""
    from django.core.files.base import ContentFile

    from annotation.services.caption_jobs import caption_import_job_create

    return caption_import_job_create(
        study=world["study"], upload=ContentFile(b"{}"), file_name="c.jsonl", enqueue=False
    ).pk


def url_for(route: Route, world) -> str:
    values = {
        "slug": lambda: world["study"].slug,
        "name": lambda: world["clip"].name,
        "clip_id": lambda: world["clip"].pk,
        "annotation_id": lambda: world["annotation"].pk,
        "model_id": lambda: world["model"].pk,
        "job_id": lambda: _score_job_id(world),
        "job": lambda: _profile_job(world, finished=False),
        "result_id": lambda: _llmfacts_result_id(world),
        "username": lambda: "annotator",
        "invitation_id": lambda: _invitation_id(world),
        "token": lambda: _invitation_token(world),
        "link_id": lambda: _recruitment_link(world)[0].pk,
        "number": lambda: 1,  # the world's guideline version
        # The admin's own parameters.
        "object_id": lambda: 1,
        "content_type_id": lambda: 1,
        "id": lambda: 1,
        "app_label": lambda: "annotation",
        "url": lambda: "nothing-here/",
    }
    # Where a route's parameter of the same name means something else.
    values_of_route = {
        "api-caption-import-job": {"job_id": lambda: _caption_import_job_id(world)},
        "api-practice-feedback": {"annotation_id": lambda: _practice_annotation_id(world)},
        "recruitment": {"token": lambda: _recruitment_link(world)[1]},
        "profile-job-file": {
            "job": lambda: _profile_job(world, finished=True),
            "name": lambda: "table.csv",
        },
    }
    values.update(values_of_route.get(route.key, {}))
    missing = [name for name in route.kwargs if name not in values]
    assert not missing, (
        f"The sweep does not know how to fill {missing} of {route.pattern}; add them to url_for."
    )
    kwargs = {name: values[name]() for name in route.kwargs}
    if route.key == route.pattern:  # unnamed: fill the pattern in
        path = route.pattern.lstrip("^").rstrip("$")
        for name, value in kwargs.items():
            path = re.sub(rf"\(\?P<{name}>[^)]*\)|<(\w+:)?{name}>", str(value), path)
        return "/" + path
    return reverse(route.key, kwargs=kwargs)


def _sent_to_log_in(location: str) -> bool:
    parts = urlsplit(location)
    try:
        name = resolve(parts.path).view_name
    except Exception:  # noqa: BLE001 - a redirect off the site is a redirect
        return False
    return name == "admin:index" or (
        name in {"login", "admin:login"} and "next" in parse_qs(parts.query)
    )


def outcome(response) -> str:
    status = response.status_code
    if status in (401, 403, 404):
        return "out"
    if 300 <= status < 400:
        return "out" if _sent_to_log_in(response["Location"]) else "redirect"
    return "in"


@pytest.fixture(scope="module")
def client():
    """One client for the whole sweep: building a client's middleware (WhiteNoise scans every
    static file) costs more than the requests themselves."""
    return Client()


def sign_in(client: Client, persona: str, world) -> Client:
    client.cookies = SimpleCookie()
    if persona != "anonymous":
        client.force_login(world["personas"][persona])
    return client


def request_as(client: Client, method: str, url: str, expect: Expect):
    kwargs: dict[str, Any] = {}
    if expect.body is not None:
        if expect.json:
            kwargs = {"data": expect.body, "content_type": "application/json"}
        else:
            kwargs = {"data": expect.body}
    return getattr(client, method.lower())(url, **kwargs)


def _body(response) -> str:
    if getattr(response, "streaming", False):
        return ""
    return response.content.decode("utf-8", errors="replace")


SWEEP = [
    pytest.param(route, method, id=f"{route.key} {method}")
    for route in ROUTES
    for method in route.methods
]


@pytest.mark.parametrize(("route", "method"), SWEEP)
def test_route_lets_in_exactly_the_expected_personas(route, method, world, client):
    expect = expectation(route, method)
    assert expect is not None, f"No entry in EXPECTED for {route.key} {method}."
    url = url_for(route, world)
    got: dict[str, set[str]] = {"in": set(), "redirect": set(), "out": set()}
    leaks = []
    hidden = []
    for persona in PERSONAS:
        with transaction.atomic():
            response = request_as(sign_in(client, persona, world), method, url, expect)
            transaction.set_rollback(True)
        got[outcome(response)].add(persona)
        if persona == "outsider" and response.status_code == 403:
            leaks.append("outsider (403 instead of 404 tells that the study exists)")
        if persona in BLIND and (
            SECRET_MODEL in _body(response) or OTHER_SECRET_MODEL in _body(response)
        ):
            leaks.append(persona)
        # The API's schema documents the field names; it holds no study's data.
        body = "" if url.startswith("/api/schema") else _body(response)
        if persona in BLIND and (
            UNSEEN_WORD in body or any(mark in body for mark in CONTROL_MARKS)
        ):
            hidden.append(persona)
    assert (got["in"], got["redirect"]) == (set(expect.allowed), set(expect.redirected)), (
        f"{method} {url}: let in {sorted(got['in'])}, redirected {sorted(got['redirect'])}; "
        f"expected in {sorted(expect.allowed)}, redirected {sorted(expect.redirected)}"
    )
    assert not leaks, f"{method} {url} shows a model's real name to {leaks}"
    assert not hidden, (
        f"{method} {url} shows {hidden} a caption not assigned to them or a control clip's mark"
    )


PAGES = [
    pytest.param(route, method, id=f"{route.key} {method}")
    for route in ROUTES
    if not route.admin and not route.pattern.startswith("api/") and route.key != "logout"
    for method in ("POST", "PUT", "DELETE")
    if method not in route.methods and (route.key, method) != ("login", "PUT")
]


@pytest.mark.parametrize(("route", "method"), PAGES)
def test_pages_answer_the_methods_they_do_not_serve_with_405(route, method, world, client):
    url = url_for(route, world)
    for persona in ("admin", "annotator"):
        response = getattr(sign_in(client, persona, world), method.lower())(url)
        assert response.status_code == 405, f"{method} {url} as {persona}: {response.status_code}"


@pytest.mark.parametrize("persona", ["admin", "researcher"])
def test_study_admins_and_researchers_see_every_caption_of_a_clip_and_the_control_mark(
    persona, world, client
):
    page = sign_in(client, persona, world).get("/studies/s1/clips/b/").content.decode()
    assert UNSEEN_WORD in page and "manipulated" in page
    captions = client.get("/api/studies/s1/captions/?clip=b").json()
    assert len(captions["results"] if isinstance(captions, dict) else captions) == 3
    clips = client.get("/api/studies/s1/clips/").json()
    rows = clips["results"] if isinstance(clips, dict) else clips
    assert {row["name"]: row["manipulated"] for row in rows}["b"] is True


def test_an_annotator_sees_only_the_captions_assigned_to_them(world, client):
    page = sign_in(client, "annotator", world).get("/studies/s1/clips/b/").content.decode()
    assert UNSEEN_WORD not in page and "Model A" in page
    captions = client.get("/api/studies/s1/captions/?clip=b").json()
    rows = captions["results"] if isinstance(captions, dict) else captions
    assert len(rows) == 2  # the two captions of clip b assigned to them, not the third
