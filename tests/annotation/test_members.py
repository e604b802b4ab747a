"""A study's members and invitations: add, change roles under the rules, deactivate (claims
released, work kept, no more access); one-time invitation links (reuse, expiry, revocation,
a signed-in account, role rules, entropy, only a hash stored); the study's history page.

These run on SQLite and, with DATABASE_URL, on PostgreSQL; the race for one link is PostgreSQL's."""

from __future__ import annotations

import re
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.errors import FieldErrors, ServiceError
from annotation.models import Annotation, AuditEvent, Invitation, Membership
from annotation.rules import workflow
from annotation.services import members
from annotation.services.studies import study_create
from annotation.services.workflow import annotation_save, annotations_assign, review_claim
from tests.annotation.studybuild import caption_record, captions_add, complete, fake_clip

pytestmark = pytest.mark.django_db


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def roles(study, username) -> list[str]:
    return sorted(Membership.objects.filter(study=study, user__username=username).values_list("role", flat=True))


# --------------------------------------------------------------------------- members


def test_a_study_admin_adds_an_existing_account_with_roles(study, personas, make_user):
    make_user("newcomer")
    response = api(personas["admin"]).post("/api/studies/s1/members/", {"username": "newcomer",
                                                                        "roles": ["reviewer", "annotator"]},
                                           format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["roles"] == ["annotator", "reviewer"]
    assert roles(study, "newcomer") == ["annotator", "reviewer"]
    event = AuditEvent.objects.get(study=study, action="member_add")
    assert (event.actor, event.after) == (personas["admin"], {"user": "newcomer", "roles": ["annotator", "reviewer"]})


@pytest.mark.parametrize(("body", "field", "message"), [
    ({"username": "nobody-here", "roles": ["annotator"]}, "username", "There is no account"),
    ({"username": "annotator", "roles": ["reviewer"]}, "username", "already a member"),
    ({"username": "newcomer", "roles": []}, "roles", "at least one role"),
    ({"username": "newcomer", "roles": ["boss"]}, "roles", "Unknown role"),
    ({"username": "newcomer", "roles": ["annotator", "researcher"]}, "roles", "both annotator and researcher"),
])
def test_adding_a_member_refuses_bad_input_naming_the_field(study, personas, make_user, body, field, message):
    make_user("newcomer")
    before = Membership.objects.count()
    response = api(personas["admin"]).post("/api/studies/s1/members/", body, format="json")
    assert response.status_code == 400
    assert field in response.json() and message in response.json()["detail"]
    assert Membership.objects.count() == before
    assert not AuditEvent.objects.filter(action="member_add").exists()


@pytest.mark.parametrize("persona", ["annotator", "reviewer", "researcher"])
def test_only_study_admins_manage_members(study, personas, make_user, persona):
    make_user("newcomer")
    client = api(personas[persona])
    assert client.post("/api/studies/s1/members/", {"username": "newcomer", "roles": ["annotator"]},
                       format="json").status_code == 403
    assert client.patch("/api/studies/s1/members/annotator/", {"roles": ["reviewer"]}, format="json").status_code == 403
    assert client.post("/api/studies/s1/members/annotator/deactivate/").status_code == 403
    assert client.post("/api/studies/s1/invitations/", {"roles": ["annotator"]}, format="json").status_code == 403
    assert roles(study, "annotator") == ["annotator"]


def test_roles_are_changed_to_exactly_the_ones_given_and_audited(study, personas):
    response = api(personas["admin"]).patch("/api/studies/s1/members/reviewer/", {"roles": ["reviewer", "researcher"]},
                                            format="json")
    assert response.status_code == 200 and response.json()["roles"] == ["reviewer", "researcher"]
    api(personas["admin"]).patch("/api/studies/s1/members/reviewer/", {"roles": ["researcher"]}, format="json")
    assert roles(study, "reviewer") == ["researcher"]
    events = AuditEvent.objects.filter(study=study, action="member_roles").order_by("pk")
    assert [(e.before["roles"], e.after["roles"]) for e in events] == [
        (["reviewer"], ["reviewer", "researcher"]), (["reviewer", "researcher"], ["researcher"])]


def test_an_annotator_cannot_also_be_researcher_nor_switch_in_one_step_into_both(study, personas):
    with pytest.raises(FieldErrors, match="both annotator and researcher"):
        members.member_roles_set(study=study, actor=personas["admin"], user=personas["annotator"],
                                 roles=["annotator", "researcher"])
    assert roles(study, "annotator") == ["annotator"]


def test_the_last_study_admin_keeps_the_role(study, personas):
    with pytest.raises(FieldErrors, match="only study admin"):
        members.member_roles_set(study=study, actor=personas["admin"], user=personas["admin"], roles=["researcher"])
    with pytest.raises(FieldErrors, match="only study admin"):
        members.member_deactivate(study=study, actor=personas["admin"], user=personas["admin"])
    members.member_roles_set(study=study, actor=personas["admin"], user=personas["reviewer"],
                             roles=["admin", "reviewer"])
    members.member_deactivate(study=study, actor=personas["reviewer"], user=personas["admin"])
    assert roles(study, "admin") == []


def test_nobody_reviews_their_own_work_even_holding_both_roles(study, personas):
    fake_clip(study, "a")
    captions_add(study, [caption_record("a")])
    annotations_assign(study=study, annotators=[personas["annotator"]])
    members.member_roles_set(study=study, actor=personas["admin"], user=personas["annotator"],
                             roles=["annotator", "reviewer"])
    submitted = complete(Annotation.objects.get(annotator=personas["annotator"]), personas["annotator"])
    with pytest.raises(ServiceError):
        review_claim(annotation_id=submitted.pk, actor=personas["annotator"])


@pytest.fixture
def claimed(study, personas):
    """A submitted annotation of `annotator`, claimed by `reviewer`."""
    fake_clip(study, "a")
    captions_add(study, [caption_record("a")])
    annotations_assign(study=study, annotators=[personas["annotator"]])
    submitted = complete(Annotation.objects.get(annotator=personas["annotator"]), personas["annotator"])
    return review_claim(annotation_id=submitted.pk, actor=personas["reviewer"])


def test_deactivating_a_reviewer_releases_their_claims_and_keeps_their_work(study, personas, claimed):
    response = api(personas["admin"]).post("/api/studies/s1/members/reviewer/deactivate/")
    assert response.status_code == 200 and response.json()["claims_released"] == 1
    released = Annotation.objects.get(pk=claimed.pk)
    assert (released.state, released.claim_expires_at) == (workflow.SUBMITTED, None)
    assert roles(study, "reviewer") == []
    assert AuditEvent.objects.filter(annotation=claimed, action="release", actor=personas["admin"]).exists()
    event = AuditEvent.objects.get(study=study, action="member_deactivate")
    assert (event.before["roles"], event.after) == (
        ["reviewer"], {"user": "reviewer", "roles": [], "claims_released": 1})
    listed = api(personas["admin"]).get("/api/studies/s1/members/").json()
    assert {"username": "reviewer", "roles": [], "active": False, "consent_version": None,
            "consent_at": None} == {
        k: v for k, v in next(m for m in listed if m["username"] == "reviewer").items() if k != "since"}


def test_losing_the_reviewer_role_releases_the_claims_too(study, personas, claimed):
    members.member_roles_set(study=study, actor=personas["admin"], user=personas["reviewer"], roles=["researcher"])
    assert Annotation.objects.get(pk=claimed.pk).state == workflow.SUBMITTED


def test_a_deactivated_annotator_can_no_longer_open_or_change_their_work_which_stays_theirs(
    study, personas, client
):
    fake_clip(study, "a")
    captions_add(study, [caption_record("a")])
    annotations_assign(study=study, annotators=[personas["annotator"]])
    annotation = Annotation.objects.get(annotator=personas["annotator"])
    members.member_deactivate(study=study, actor=personas["admin"], user=personas["annotator"])
    annotator = type(personas["annotator"]).objects.get(pk=personas["annotator"].pk)
    with pytest.raises(ServiceError, match="no longer an annotator"):
        annotation_save(annotation_id=annotation.pk, actor=annotator, base_version=annotation.version,
                        changes={"ui_state": {"unit": 1}})
    client.force_login(annotator)
    assert client.get("/studies/s1/").status_code == 404
    assert client.get(f"/annotate/{annotation.pk}/").status_code == 404
    assert client.post(f"/annotate/{annotation.pk}/").status_code == 404
    assert client.get(f"/api/annotations/{annotation.pk}/").status_code == 404
    assert client.patch(f"/api/annotations/{annotation.pk}/draft/", {"base_version": 1, "changes": {}},
                        content_type="application/json").status_code in (403, 404)
    assert client.get("/api/studies/").json()["results"] == []
    assert Annotation.objects.get(pk=annotation.pk).annotator_id == annotator.pk


def test_a_deactivated_member_added_again_is_a_member_again(study, personas):
    members.member_deactivate(study=study, actor=personas["admin"], user=personas["researcher"])
    members.member_add(study=study, actor=personas["admin"], user=personas["researcher"], roles=["researcher"])
    assert roles(study, "researcher") == ["researcher"]
    assert all(m.active for m in members.members_list(study=study))


def test_deactivating_someone_who_is_not_a_member_is_refused(study, personas):
    response = api(personas["admin"]).post("/api/studies/s1/members/outsider/deactivate/")
    assert response.status_code == 404


# --------------------------------------------------------------------------- invitations


def invite(admin, **body):
    return api(admin).post("/api/studies/s1/invitations/", {"roles": ["annotator"], **body}, format="json")


def token_of(response) -> str:
    return re.search(r"/invitations/([^/]+)/$", response.json()["url"]).group(1)


def test_an_invitation_link_holds_at_least_128_bits_and_only_its_hash_is_stored(study, personas):
    response = invite(personas["admin"], note="ana@example.org")
    assert response.status_code == 201, response.json()
    token = token_of(response)
    assert len(token) >= 43  # 32 random bytes, base64url: 256 bits
    stored = Invitation.objects.get()
    assert stored.token_hash == members.token_hash(token) and token not in stored.token_hash
    assert all(token not in str(value) for value in Invitation.objects.values().get().values())
    assert all(token not in str(e.after) for e in AuditEvent.objects.all())
    listed = api(personas["admin"]).get("/api/studies/s1/invitations/").json()
    assert "url" not in listed[0] and token not in str(listed)
    other_tokens = {token_of(invite(personas["admin"])) for _ in range(5)}
    assert len(other_tokens | {token}) == 6


def test_accepting_creates_an_account_with_exactly_the_invited_roles(study, personas, client):
    token = token_of(invite(personas["admin"], roles=["reviewer", "annotator"]))
    page = client.get(f"/invitations/{token}/")
    assert page.status_code == 200 and "Create account and join" in page.content.decode()
    answer = client.post(f"/invitations/{token}/", {"username": "ana", "password": "long-enough-pw",
                                                    "password2": "long-enough-pw"})
    assert answer.status_code == 302 and answer["Location"] == "/studies/s1/"
    assert roles(study, "ana") == ["annotator", "reviewer"]
    assert client.get("/studies/s1/").status_code == 200  # signed in as the new account
    invitation = Invitation.objects.get()
    assert invitation.accepted_by.username == "ana" and invitation.state == "accepted"
    assert AuditEvent.objects.filter(study=study, action="invitation_accept", actor__username="ana").exists()


def test_an_invitation_link_works_once(study, personas, client, make_user):
    token = token_of(invite(personas["admin"]))
    members.invitation_accept_new_account(token=token, username="ana", password="long-enough-pw")
    page = client.get(f"/invitations/{token}/")
    assert page.status_code == 410 and "already used" in page.content.decode()
    second = make_user("bea")
    with pytest.raises(members.InvitationInvalid, match="already used"):
        members.invitation_accept(token=token, user=second)
    assert roles(study, "bea") == []


def test_an_expired_link_is_refused(study, personas, client):
    token = token_of(invite(personas["admin"], days=1))
    Invitation.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    page = client.get(f"/invitations/{token}/")
    assert page.status_code == 410 and "expired" in page.content.decode()
    assert client.post(f"/invitations/{token}/", {"username": "ana", "password": "long-enough-pw",
                                                  "password2": "long-enough-pw"}).status_code == 410
    assert not type(personas["admin"]).objects.filter(username="ana").exists()


def test_a_revoked_link_is_refused_and_revoking_is_audited(study, personas, client):
    created = invite(personas["admin"])
    token = token_of(created)
    revoked = api(personas["admin"]).post(f"/api/studies/s1/invitations/{created.json()['id']}/revoke/")
    assert revoked.status_code == 200 and revoked.json()["state"] == "revoked"
    assert "withdrawn" in client.get(f"/invitations/{token}/").content.decode()
    assert AuditEvent.objects.filter(study=study, action="invitation_revoke").exists()
    again = api(personas["admin"]).post(f"/api/studies/s1/invitations/{created.json()['id']}/revoke/")
    assert again.status_code == 409


def test_a_guessed_or_mangled_link_is_refused(study, personas, client):
    token = token_of(invite(personas["admin"]))
    for guess in (token[:-1] + ("A" if token[-1] != "A" else "B"), "x", "a" * 200):
        page = client.get(f"/invitations/{guess}/")
        assert page.status_code == 410 and "not valid" in page.content.decode()


def test_signed_in_as_someone_else_the_page_asks_which_account(study, personas, client, make_user):
    token = token_of(invite(personas["admin"], roles=["reviewer"]))
    bea = make_user("bea")
    client.force_login(bea)
    page = client.get(f"/invitations/{token}/").content.decode()
    assert "signed in as <strong>bea</strong>" in page and "Sign out and use another account" in page
    assert client.post(f"/invitations/{token}/", {}).status_code == 400  # no account chosen
    assert roles(study, "bea") == []
    assert client.post(f"/invitations/{token}/", {"account": "bea"}).status_code == 302
    assert roles(study, "bea") == ["reviewer"]


def test_an_invitation_that_would_make_an_annotator_a_researcher_is_refused_and_stays_open(study, personas):
    token = token_of(invite(personas["admin"], roles=["researcher"]))
    with pytest.raises(ServiceError, match="both annotator and researcher"):
        members.invitation_accept(token=token, user=personas["annotator"])
    assert roles(study, "annotator") == ["annotator"] and Invitation.objects.get().state == "open"


@pytest.mark.parametrize(("body", "field"), [
    ({"roles": ["annotator", "researcher"]}, "roles"),
    ({"roles": []}, "roles"),
    ({"roles": ["annotator"], "days": 0}, "days"),
    ({"roles": ["annotator"], "days": 31}, "days"),
    ({"roles": ["annotator"], "note": "x" * 201}, "note"),
])
def test_bad_invitations_are_refused_naming_the_field(study, personas, body, field):
    response = api(personas["admin"]).post("/api/studies/s1/invitations/", body, format="json")
    assert response.status_code == 400 and field in response.json()
    assert not Invitation.objects.exists()


def test_a_new_account_with_a_taken_name_or_short_password_creates_nothing(study, personas, client):
    token = token_of(invite(personas["admin"]))
    taken = client.post(f"/invitations/{token}/", {"username": "annotator", "password": "long-enough-pw",
                                                  "password2": "long-enough-pw"})
    assert taken.status_code == 400 and "is taken" in taken.content.decode()
    short = client.post(f"/invitations/{token}/", {"username": "ana", "password": "short", "password2": "short"})
    assert short.status_code == 400 and "too short" in short.content.decode()
    differ = client.post(f"/invitations/{token}/", {"username": "ana", "password": "long-enough-pw",
                                                   "password2": "other-long-pw"})
    assert differ.status_code == 400 and "differ" in differ.content.decode()
    assert not type(personas["admin"]).objects.filter(username="ana").exists()
    assert Invitation.objects.get().state == "open"


# --------------------------------------------------------------------------- history


def test_the_history_page_lists_every_membership_and_settings_change_for_study_admins(study, personas, client):
    token = token_of(invite(personas["admin"], note="for Ana"))
    members.invitation_accept_new_account(token=token, username="ana", password="long-enough-pw")
    members.member_roles_set(study=study, actor=personas["admin"], user=personas["reviewer"],
                             roles=["reviewer", "researcher"])
    members.member_deactivate(study=study, actor=personas["admin"], user=personas["researcher"])
    api(personas["admin"]).patch("/api/studies/s1/", {"undo_seconds": 30}, format="json")
    client.force_login(personas["admin"])
    html = client.get("/studies/s1/history/").content.decode()
    for sentence in ("Made invitation", "(for Ana)", "ana accepted invitation", "Changed reviewer&#x27;s roles",
                     "Deactivated researcher", "Changed undo_seconds"):
        assert sentence in html, sentence
    actions = [e["action"] for e in api(personas["admin"]).get("/api/studies/s1/history/").json()]
    assert actions == ["study_update", "member_deactivate", "member_roles", "invitation_accept", "invitation_create"]
    client.force_login(personas["reviewer"])
    assert client.get("/studies/s1/history/").status_code == 404


# --------------------------------------------------------------------------- PostgreSQL


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_people_accepting_one_link_at_once_get_it_once(make_user):
    admin = make_user("boss")
    study = study_create(slug="race", name="race", created_by=admin)
    _, token = members.invitation_create(study=study, actor=admin, roles=["annotator"])
    people = [make_user(f"p{n}") for n in range(8)]
    barrier = threading.Barrier(len(people))
    results: list = [None] * len(people)

    def accept(position, person):
        try:
            barrier.wait(timeout=30)
            results[position] = members.invitation_accept(token=token, user=person)
        except Exception as exc:  # noqa: BLE001 - counted below
            results[position] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=accept, args=(n, p)) for n, p in enumerate(people)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    accepted = [r for r in results if isinstance(r, Invitation)]
    assert len(accepted) == 1, results
    assert all(isinstance(r, members.InvitationInvalid) for r in results if not isinstance(r, Invitation))
    assert Membership.objects.filter(study=study, role="annotator").count() == 1


def test_a_new_account_with_a_bad_email_address_is_refused_at_the_field(study, personas, client):
    token = token_of(invite(personas["admin"]))
    answer = client.post(f"/invitations/{token}/", {"username": "ana", "email": "not-an-address",
                                                    "password": "long-enough-pw", "password2": "long-enough-pw"})
    assert answer.status_code == 400 and "is not an e-mail address" in answer.content.decode()
    assert not type(personas["admin"]).objects.filter(username="ana").exists()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_studies_created_at_once_with_one_slug_give_one_study_and_one_field_message(make_user):
    from annotation.services.taxonomy import taxonomy_default

    taxonomy_default()  # as migration 0003 made it: a flushed test database lacks it
    people = [make_user(f"maker{n}") for n in range(4)]
    barrier = threading.Barrier(len(people))
    results: list = [None] * len(people)

    def create(position, person):
        try:
            barrier.wait(timeout=30)
            results[position] = study_create(slug="same", name="Same", created_by=person)
        except Exception as exc:  # noqa: BLE001 - counted below
            results[position] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=create, args=(n, p)) for n, p in enumerate(people)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    refused = [r for r in results if isinstance(r, FieldErrors)]
    assert len(refused) == len(people) - 1, results
    assert all("already exists" in r.errors["slug"] for r in refused)
    assert Membership.objects.filter(study__slug="same").count() == 1
