"""The audit's smaller findings: claims, independent review, blind annotators, sign-in throttling,
API authentication, the Content-Security-Policy and the production settings."""

from __future__ import annotations

import base64
import os
import re
import subprocess
import sys

import pytest
from django.test import Client
from rest_framework.authtoken.models import Token

from annotation.errors import ServiceError
from annotation.models import Annotation, Membership
from annotation.services.studies import membership_grant
from annotation.services.workflow import (
    NotAllowed,
    annotations_assign,
    review_claim,
)
from tests.annotation.studybuild import SECRET_MODEL, caption_record, captions_add, complete, fake_clip
from tests.conftest import REPO

pytestmark = pytest.mark.django_db


@pytest.fixture
def submitted(study, personas):
    """The annotator's submitted annotation of clip "a" by the secret model."""
    fake_clip(study, "a")
    captions_add(study, [caption_record("a", SECRET_MODEL)])
    annotations_assign(study=study, annotators=[personas["annotator"]])
    return complete(Annotation.objects.get(), personas["annotator"])


def api_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


# ------------------------------------------------------------------ claims and reviews


def test_releasing_someone_elses_claim_is_refused_and_changes_nothing(
    submitted, study, personas, make_user
):
    other = make_user("reviewer2")
    membership_grant(study=study, user=other, role="reviewer")
    review_claim(annotation_id=submitted.pk, actor=personas["reviewer"])
    answer = api_client(other).post(f"/api/annotations/{submitted.pk}/release/")
    assert answer.status_code == 409
    assert "claimed by reviewer, not by you" in answer.json()["detail"]
    held = Annotation.objects.get(pk=submitted.pk)
    assert (held.state, held.reviewer) == ("in_review", personas["reviewer"])


def test_releasing_without_a_claim_is_refused(submitted, personas):
    answer = api_client(personas["reviewer"]).post(f"/api/annotations/{submitted.pk}/release/")
    assert answer.status_code == 409
    assert "no claim of yours to release" in answer.json()["detail"]


def test_releasing_ones_own_claim_still_works(submitted, personas):
    review_claim(annotation_id=submitted.pk, actor=personas["reviewer"])
    answer = api_client(personas["reviewer"]).post(f"/api/annotations/{submitted.pk}/release/")
    assert answer.status_code == 200 and answer.json()["state"] == "submitted"


def test_a_reviewer_who_annotated_the_caption_does_not_review_anothers_version(study, personas):
    # The reviewer is also an annotator of the study; both annotate the same caption.
    membership_grant(study=study, user=personas["reviewer"], role="annotator")
    fake_clip(study, "a")
    captions_add(study, [caption_record("a", SECRET_MODEL)])
    annotations_assign(study=study, annotators=[personas["annotator"], personas["reviewer"]],
                       overlap_share=1)
    theirs = complete(Annotation.objects.get(annotator=personas["annotator"]),
                      personas["annotator"])
    assert Annotation.objects.filter(caption=theirs.caption).count() == 2
    with pytest.raises(NotAllowed, match="annotated this caption yourself"):
        review_claim(annotation_id=theirs.pk, actor=personas["reviewer"])
    answer = api_client(personas["reviewer"]).post(f"/api/annotations/{theirs.pk}/claim/")
    assert answer.status_code == 403
    assert Annotation.objects.get(pk=theirs.pk).state == "submitted"
    # Nor does their review queue offer it.
    queue = api_client(personas["reviewer"]).get("/api/studies/s1/review-queue/").json()
    assert theirs.pk not in [item["id"] for item in queue["items"]]
    queue = api_client(personas["admin"]).get("/api/studies/s1/review-queue/").json()
    assert theirs.pk in [item["id"] for item in queue["items"]]


# ------------------------------------------------------------------ blind annotators


@pytest.mark.parametrize(("first", "second"), [("annotator", "researcher"),
                                                ("researcher", "annotator")])
def test_nobody_is_both_annotator_and_researcher_of_one_study(study, make_user, first, second):
    person = make_user("both")
    membership_grant(study=study, user=person, role=first)
    with pytest.raises(ServiceError, match="nobody is both annotator and researcher"):
        membership_grant(study=study, user=person, role=second)
    assert set(Membership.objects.filter(user=person).values_list("role", flat=True)) == {first}


def test_an_annotator_holding_the_researcher_role_from_before_never_sees_model_names(
    submitted, study, personas
):
    # A combination stored before the rule (or by hand) still keeps the annotator blind.
    Membership.objects.create(study=study, user=personas["annotator"], role="researcher")
    client = api_client(personas["annotator"])
    for path in ("/studies/s1/", "/studies/s1/clips/a/", "/api/studies/s1/captions/",
                 "/api/studies/s1/models/", f"/annotate/{submitted.pk}/",
                 f"/api/annotations/{submitted.pk}/", "/studies/s1/queue/"):
        response = client.get(path)
        assert response.status_code == 200, path
        assert SECRET_MODEL not in response.content.decode(), path
    # The researcher who does not annotate still sees them.
    assert SECRET_MODEL in api_client(personas["researcher"]).get("/studies/s1/").content.decode()


# ------------------------------------------------------------------ signing in


@pytest.fixture
def fresh_throttle(settings):
    settings.LOGIN_FAILURES_PER_ACCOUNT_AND_ADDRESS = 3
    settings.LOGIN_FAILURES_PER_ADDRESS = 5
    return settings


def sign_in(username: str, password: str, address: str = "10.0.0.1"):
    return Client(REMOTE_ADDR=address).post(
        "/login/", {"username": username, "password": password}
    )


def test_an_account_is_locked_at_an_address_after_repeated_failures_even_for_the_right_password(
    personas, fresh_throttle
):
    for _ in range(3):
        assert sign_in("annotator", "wrong").status_code == 200
    refused = sign_in("annotator", "pw-annotator")
    assert refused.status_code == 200
    assert "Too many failed sign-ins for this account from your address" in refused.content.decode()
    # Other accounts are not affected, nor is the account elsewhere (tests/frontend/test_sign_in_throttle.py).
    assert sign_in("reviewer", "pw-reviewer").status_code == 302


def test_an_address_is_locked_after_failures_on_many_accounts(personas, fresh_throttle):
    for n in range(5):
        sign_in(f"nobody{n}", "wrong", address="10.9.9.9")
    refused = sign_in("admin", "pw-admin", address="10.9.9.9")
    assert "Too many failed sign-ins from your address" in refused.content.decode()
    assert sign_in("admin", "pw-admin", address="10.0.0.3").status_code == 302


def test_a_successful_sign_in_clears_the_accounts_failures(personas, fresh_throttle):
    sign_in("annotator", "wrong")
    sign_in("annotator", "wrong")
    assert sign_in("annotator", "pw-annotator").status_code == 302
    sign_in("annotator", "wrong")
    sign_in("annotator", "wrong")
    assert sign_in("annotator", "pw-annotator").status_code == 302


def test_the_admin_sign_in_is_throttled_too(personas, fresh_throttle):
    personas["admin"].is_staff = True
    personas["admin"].save()
    for _ in range(3):
        Client().post("/admin/login/", {"username": "admin", "password": "wrong"})
    page = Client().post("/admin/login/", {"username": "admin", "password": "pw-admin"})
    assert "Too many failed sign-ins" in page.content.decode()


# ------------------------------------------------------------------ API authentication


def test_the_api_ignores_http_basic_credentials(personas):
    credentials = base64.b64encode(b"admin:pw-admin").decode()
    answer = Client().get("/api/studies/", HTTP_AUTHORIZATION=f"Basic {credentials}")
    assert answer.status_code in (401, 403)


def test_the_api_accepts_a_token(personas):
    token = Token.objects.create(user=personas["admin"])
    answer = Client().get("/api/studies/", HTTP_AUTHORIZATION=f"Token {token.key}")
    assert answer.status_code == 200
    assert [s["slug"] for s in answer.json()["results"]] == ["s1"]


# ------------------------------------------------------------------ Content-Security-Policy


def test_every_page_is_sent_with_a_content_security_policy_without_inline_scripts(personas):
    page = api_client(personas["admin"]).get("/studies/s1/")
    policy = page["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    assert "object-src 'none'" in policy and "frame-ancestors 'none'" in policy
    assert Client().get("/login/")["Content-Security-Policy"] == policy


TEMPLATES = sorted((REPO / "frontend" / "templates").rglob("*.html"))


@pytest.mark.parametrize("template", TEMPLATES, ids=[t.name for t in TEMPLATES])
def test_templates_hold_no_inline_script_handler_or_style(template):
    """What the policy would block: a script element with code in it (json_script's data blocks
    are data), an on... handler attribute, a javascript: address, a style attribute."""
    text = template.read_text(encoding="utf-8")
    for tag in re.findall(r"<script\b[^>]*>", text):
        assert "src=" in tag or 'type="application/json"' in tag, f"{template.name}: {tag}"
    assert not re.search(r"\son[a-z]+\s*=", text), template.name
    assert "javascript:" not in text.lower(), template.name
    assert not re.search(r"\sstyle\s*=", text), template.name
    assert "<style" not in text, template.name


def test_the_api_documentation_runs_without_inline_scripts():
    response = Client().get("/api/docs/")
    for tag in re.findall(r"<script\b[^>]*>", response.content.decode()):
        assert "src=" in tag, tag
    # Swagger UI writes style elements: inline styles, never scripts, on this page alone.
    policy = response["Content-Security-Policy"]
    assert "script-src 'self';" in policy and "style-src 'self' 'unsafe-inline'" in policy


# ------------------------------------------------------------------ production settings


def settings_run(code: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DEBUG", "SECRET_KEY",
             "ALLOWED_HOSTS", "DATABASE_URL", "SECURE_", "DJANGO_"))}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
        env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings", **env},
    )


def test_debug_on_with_a_public_host_refuses_to_start():
    result = settings_run("import django; django.setup()", ALLOWED_HOSTS="redline.example.org")
    assert result.returncode != 0
    assert "DEBUG is on" in result.stderr and "redline.example.org" in result.stderr


def test_debug_on_with_local_hosts_starts_as_the_demo_does():
    result = settings_run("import django; django.setup()", ALLOWED_HOSTS="localhost,127.0.0.1")
    assert result.returncode == 0, result.stderr


PRODUCTION = {
    "DEBUG": "0",
    "SECRET_KEY": "k3-" + "Zq8x!Lm2#Vr9$Tb4%Wn7^Yc1&Hf6*Jd0@Pg5" * 2,
    "ALLOWED_HOSTS": "redline.example.org",
    "CSRF_TRUSTED_ORIGINS": "https://redline.example.org",
}


def test_check_deploy_with_the_documented_production_settings_has_no_security_warning(tmp_path):
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy"], cwd=REPO, capture_output=True,
        text=True, timeout=300,
        # DJANGO_ALLOW_ASYNC_UNSAFE is set in this process by the browser tests (Playwright runs an
        # event loop); a production server never has it.
        env={**{k: v for k, v in os.environ.items()
                if not k.startswith(("DEBUG", "SECURE_", "DJANGO_ALLOW_ASYNC_UNSAFE"))},
             **PRODUCTION, "DATABASE_URL": f"sqlite:///{tmp_path / 'x.sqlite3'}"},
    )
    assert result.returncode == 0, result.stderr
    assert "security." not in result.stdout + result.stderr


def test_hsts_and_the_https_redirect_follow_the_environment():
    code = ("import django; django.setup(); from django.conf import settings as s; "
            "print(s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS, s.SECURE_PROXY_SSL_HEADER)")
    default = settings_run(code, **PRODUCTION)
    assert default.stdout.split()[:2] == ["True", "31536000"], default.stderr
    off = settings_run(code, **PRODUCTION, SECURE_SSL_REDIRECT="0", SECURE_HSTS_SECONDS="0")
    assert off.stdout.split()[:2] == ["False", "0"]
    assert "HTTP_X_FORWARDED_PROTO" in default.stdout


def test_behind_the_proxy_the_address_comes_from_the_configured_header(personas, fresh_throttle):
    fresh_throttle.CLIENT_ADDRESS_HEADER = "HTTP_X_REAL_IP"
    for n in range(5):
        Client(REMOTE_ADDR="127.0.0.1", HTTP_X_REAL_IP="203.0.113.7").post(
            "/login/", {"username": f"nobody{n}", "password": "wrong"})
    # The proxy's own address is not locked: another browser behind it signs in.
    other = Client(REMOTE_ADDR="127.0.0.1", HTTP_X_REAL_IP="203.0.113.8").post(
        "/login/", {"username": "admin", "password": "pw-admin"})
    assert other.status_code == 302
    locked = Client(REMOTE_ADDR="127.0.0.1", HTTP_X_REAL_IP="203.0.113.7").post(
        "/login/", {"username": "admin", "password": "pw-admin"})
    assert "Too many failed sign-ins from your address" in locked.content.decode()
