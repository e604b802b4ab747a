"""Invitations sent by e-mail, through a real SMTP server on 127.0.0.1 (aiosmtpd): the message
arrives with a link that works once; a server that refuses, or cannot be reached, loses nothing
(the invitation is kept, marked failed with the server's answer, and can be sent again); sending
happens only once the invitation is committed; re-sending makes a new link and the old one stops
working. Transactional tests: the message goes when the transaction really commits (PostgreSQL:
SQLite cannot flush a started study's frozen taxonomy between transactional tests)."""

from __future__ import annotations

import re

import pytest
from django.db import transaction
from django.test import Client
from rest_framework.test import APIClient

from annotation.models import AuditEvent, Invitation, Membership
from annotation.services.invitation_mail import invitation_create_and_send
from tests.smtp import free_port

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

LINK = re.compile(r"http://testserver/invitations/[A-Za-z0-9_-]{40,}/")


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def invite(admin, **body):
    return api(admin).post("/api/studies/s1/invitations/", {"roles": ["annotator"], **body}, format="json")


def test_an_invitation_with_an_email_arrives_with_a_link_that_makes_a_member(personas, smtp_server, study):
    answer = invite(personas["admin"], email="ana@example.org", note="Ana")
    assert answer.status_code == 201, answer.json()
    body = answer.json()
    assert (body["email"], body["mail_state"], body["mail_error"], body["mail_attempts"]) == (
        "ana@example.org", "sent", "", 1)
    [message] = smtp_server.inbox.messages
    assert message["To"] == "ana@example.org" and message["X-Envelope-To"] == "ana@example.org"
    assert message["Subject"] == "Invitation to Study one on Redline"
    assert message["From"] == "Redline <redline@localhost>"
    text = message.get_content()
    [link] = LINK.findall(text)
    assert link == body["url"]
    assert "as annotator" in text and "works once" in text

    guest = Client()
    assert guest.get(link).status_code == 200
    made = guest.post(link, {"username": "ana", "password": "ana-long-password", "password2": "ana-long-password"})
    assert made.status_code == 302, made.content[:400]
    assert Membership.objects.filter(study=study, user__username="ana", role="annotator").exists()
    assert Client().get(link).status_code == 410  # once only
    event = AuditEvent.objects.get(study=study, action="invitation_create")
    assert event.after["email"] == "ana@example.org" and link.rsplit("/", 2)[1] not in str(event.after)


def test_a_refusing_server_keeps_the_invitation_marked_failed_with_its_answer(personas, refusing_smtp_server, study):
    answer = invite(personas["admin"], email="nobody@example.org")
    assert answer.status_code == 201, answer.json()
    body = answer.json()
    assert body["mail_state"] == "failed"
    assert body["mail_error"] == ("The mail server refused the address: nobody@example.org: "
                                  "550 5.1.1 Recipient address rejected: User unknown")
    assert refusing_smtp_server.inbox.messages == []
    stored = Invitation.objects.get(pk=body["id"])
    assert (stored.state, stored.mail_state, stored.email) == ("open", "failed", "nobody@example.org")
    listed = api(personas["admin"]).get("/api/studies/s1/invitations/").json()
    assert [(row["id"], row["mail_state"], row["mail_error"]) for row in listed] == [
        (body["id"], "failed", body["mail_error"])]
    assert Client().get(body["url"]).status_code == 200  # the link shown on the page still works


def test_an_unreachable_server_is_said_and_the_invitation_kept(personas, settings, study):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", free_port()  # nothing listens there
    body = invite(personas["admin"], email="ana@example.org").json()
    assert body["mail_state"] == "failed"
    assert body["mail_error"].startswith(f"The mail server 127.0.0.1:{settings.EMAIL_PORT} cannot be reached")
    assert Invitation.objects.filter(pk=body["id"], mail_state="failed").exists()


def test_sending_again_makes_a_new_link_and_the_old_one_stops_working(personas, settings, study):
    from tests.smtp import SmtpServer

    with SmtpServer(refuse="550 5.1.1 Recipient address rejected: User unknown") as refusing:
        refusing.use(settings)
        first = invite(personas["admin"], email="ana@exmaple.org").json()
    assert first["mail_state"] == "failed"
    with SmtpServer() as server:
        server.use(settings)
        again = api(personas["admin"]).post(f"/api/studies/s1/invitations/{first['id']}/send/",
                                            {"email": "ana@example.org"}, format="json")
        assert again.status_code == 200, again.json()
        body = again.json()
        assert (body["email"], body["mail_state"], body["mail_error"], body["mail_attempts"]) == (
            "ana@example.org", "sent", "", 2)
        [message] = server.inbox.messages
        assert message["To"] == "ana@example.org"
        [link] = LINK.findall(message.get_content())
    assert link == body["url"] != first["url"]
    assert Client().get(first["url"]).status_code == 410
    assert Client().get(link).status_code == 200
    event = AuditEvent.objects.get(study=study, action="invitation_send")
    assert event.before["email"] == "ana@exmaple.org" and event.after["email"] == "ana@example.org"


def test_an_invitation_that_is_not_open_or_has_no_address_is_not_sent(personas, smtp_server, study):
    admin = api(personas["admin"])
    plain = invite(personas["admin"]).json()
    assert plain["mail_state"] == "" and plain["email"] == ""
    answer = admin.post(f"/api/studies/s1/invitations/{plain['id']}/send/", {}, format="json")
    assert answer.status_code == 400 and "no e-mail address" in answer.json()["email"][0]
    sent = invite(personas["admin"], email="ana@example.org").json()
    assert admin.post(f"/api/studies/s1/invitations/{sent['id']}/revoke/").status_code == 200
    answer = admin.post(f"/api/studies/s1/invitations/{sent['id']}/send/", {}, format="json")
    assert answer.status_code == 409 and "revoked" in answer.json()["detail"]
    assert len(smtp_server.inbox.messages) == 1


@pytest.mark.parametrize("email", ["not-an-address", "a@b@c", "x" * 250 + "@example.org"])
def test_a_bad_address_is_refused_naming_the_field_and_nothing_is_stored(personas, smtp_server, study, email):
    answer = invite(personas["admin"], email=email)
    assert answer.status_code == 400 and "email" in answer.json()
    assert not Invitation.objects.exists() and smtp_server.inbox.messages == []


def test_nothing_is_sent_when_the_invitation_is_not_committed(personas, smtp_server, study):
    with pytest.raises(RuntimeError), transaction.atomic():
        invitation_create_and_send(study=study, actor=personas["admin"], base_url="http://testserver/",
                                   email="ana@example.org", roles=["annotator"])
        raise RuntimeError("the surrounding work fails")
    assert not Invitation.objects.exists() and smtp_server.inbox.messages == []


def test_demo_mail_is_written_as_files(personas, settings, tmp_path, study):
    """`make demo` writes messages to files (Django's file-based backend) in var/mail."""
    settings.EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    settings.EMAIL_FILE_PATH = str(tmp_path / "mail")
    body = invite(personas["admin"], email="ana@example.org").json()
    assert body["mail_state"] == "sent"
    [written] = list((tmp_path / "mail").iterdir())
    assert body["url"] in written.read_text()


def test_the_outcome_of_an_earlier_sending_does_not_overwrite_a_later_one(personas, refusing_smtp_server, study):
    from annotation.services.invitation_mail import invitation_deliver

    body = invite(personas["admin"], email="ana@example.org").json()
    earlier = Invitation.objects.get(pk=body["id"]).token_hash
    Invitation.objects.filter(pk=body["id"]).update(token_hash="0" * 64, mail_state="sending")  # sent again since
    assert invitation_deliver(invitation_id=body["id"], link=body["url"], sent_hash=earlier) == "failed"
    assert Invitation.objects.get(pk=body["id"]).mail_state == "sending"
