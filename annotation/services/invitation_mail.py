"""Invitations sent by e-mail: the link goes to the invited address, through Django's e-mail
framework (settings EMAIL_*), once the transaction that made the link commits.

Only the sha256 of a link's token is stored, so sending an invitation again makes a new token:
the link of the earlier message stops working (a lost or mistyped message cannot be used
later), and the one-time rules stay those of annotation.services.members. A mail server that
refuses the message, or cannot be reached, loses nothing: the invitation is kept, marked
failed with the server's answer, and can be sent again from the members page.
"""

from __future__ import annotations

import logging
import secrets
import smtplib

from django.conf import settings
from django.core.mail import EmailMessage
from django.db import DatabaseError, transaction
from django.utils import timezone

from annotation.errors import FieldErrors, ServiceError
from annotation.models import Invitation, Membership
from annotation.services.members import TOKEN_BYTES, email_problem, invitation_create, token_hash
from annotation.services.studies import study_audit
from annotation.services.study_state import Write, study_require

logger = logging.getLogger(__name__)

ERROR_MAX = 1000


def email_checked(email: object) -> str:
    """The address, trimmed; FieldErrors naming `email` when it is not one."""
    email = email.strip() if isinstance(email, str) else email
    problem = email_problem(email)
    if problem:
        raise FieldErrors({"email": problem})
    return email  # type: ignore[return-value]


def invitation_link(base_url: str, token: str) -> str:
    return f"{base_url.rstrip('/')}/invitations/{token}/"


def _one_line(text: str) -> str:
    # A header holds one line: a study's name with a line break would be refused by Django.
    return " ".join(text.split())


def invitation_message(*, invitation: Invitation, link: str) -> EmailMessage:
    """The message that carries the invitation's link (plain text)."""
    study = invitation.study
    roles = ", ".join(Membership.Role(role).label for role in invitation.roles)
    inviter = invitation.created_by.get_username()
    body = (
        f"{inviter} invites you to the study \"{_one_line(study.name)}\" on Redline, as {roles}.\n\n"
        f"Open this link to accept. It works once, until {invitation.expires_at:%Y-%m-%d %H:%M} UTC:\n\n"
        f"{link}\n\n"
        "If you did not expect this message, ignore it: nothing happens unless the link is opened.\n"
    )
    return EmailMessage(
        subject=f"Invitation to {_one_line(study.name)[:150]} on Redline",
        body=body, from_email=settings.DEFAULT_FROM_EMAIL, to=[invitation.email],
    )


def mail_error(error: BaseException) -> str:
    """What went wrong, in the mail server's words where it answered."""
    if isinstance(error, smtplib.SMTPRecipientsRefused):
        refused = "; ".join(
            f"{address}: {code} {message.decode('utf-8', 'replace') if isinstance(message, bytes) else message}"
            for address, (code, message) in error.recipients.items()
        )
        text = f"The mail server refused the address: {refused}"
    elif isinstance(error, smtplib.SMTPResponseException):
        message = error.smtp_error
        message = message.decode("utf-8", "replace") if isinstance(message, bytes) else str(message)
        text = f"The mail server refused the message: {error.smtp_code} {message}"
    elif isinstance(error, smtplib.SMTPException):
        text = f"The mail server failed: {error}"
    elif isinstance(error, OSError):
        text = (f"The mail server {settings.EMAIL_HOST}:{settings.EMAIL_PORT} cannot be reached: "
                f"{error.strerror or error}")
    else:
        text = f"Sending failed: {type(error).__name__}: {error}"
    return text[:ERROR_MAX]


def invitation_deliver(*, invitation_id: int, link: str, sent_hash: str) -> str:
    """Send the invitation's message now and record how it went (sent, or failed with the
    server's answer) while `sent_hash` (its token's) is still the invitation's; returns the
    state. Called once the link's transaction committed."""
    invitation = Invitation.objects.select_related("study", "created_by").get(pk=invitation_id)
    try:
        invitation_message(invitation=invitation, link=link).send(fail_silently=False)
    except Exception as error:  # noqa: BLE001 - every failure is recorded on the invitation
        state, changes = Invitation.Mail.FAILED, {"mail_error": mail_error(error)}
        logger.warning("invitation #%s to %s not sent: %s", invitation_id, invitation.email, changes["mail_error"])
    else:
        state, changes = Invitation.Mail.SENT, {"mail_error": "", "mail_sent_at": timezone.now()}
    try:
        # Only the sending that was asked last records its outcome (a newer one may be under way).
        Invitation.objects.filter(pk=invitation_id, token_hash=sent_hash).update(
            mail_state=state, **changes)
    except DatabaseError:  # the study closed meanwhile (its rows are frozen): the page says "sending"
        logger.warning("invitation #%s: the outcome of sending could not be recorded", invitation_id,
                       exc_info=True)
    return state


def _send_after_commit(invitation: Invitation, token: str, base_url: str) -> None:
    link, sent_hash = invitation_link(base_url, token), token_hash(token)
    transaction.on_commit(lambda: invitation_deliver(invitation_id=invitation.pk, link=link, sent_hash=sent_hash))


@transaction.atomic
def invitation_create_and_send(*, study, actor, base_url: str, email: str = "", **fields) -> tuple[Invitation, str]:
    """members.invitation_create; with `email`, the link is also sent there once the invitation
    is committed (its state "sending", then "sent" or "failed")."""
    invitation, token = invitation_create(study=study, actor=actor, email=email, **fields)
    if invitation.email:
        Invitation.objects.filter(pk=invitation.pk).update(mail_state=Invitation.Mail.SENDING, mail_attempts=1)
        invitation.mail_state, invitation.mail_attempts = Invitation.Mail.SENDING, 1
        _send_after_commit(invitation, token, base_url)
    return invitation, token


@transaction.atomic
def invitation_send(
    *, invitation: Invitation, actor, base_url: str, email: str | None = None
) -> tuple[Invitation, str]:
    """Send an open invitation's link (again) by e-mail, to `email` when given (it replaces the
    address), else to its own. A new token is made: the link of an earlier message stops working.
    Audited as `invitation_send` (the address, never the link). Returns the invitation and its
    new token."""
    study_require(invitation.study, Write.MEMBERS)
    locked = Invitation.objects.select_for_update().select_related("study", "created_by").get(pk=invitation.pk)
    if locked.state != "open":
        raise ServiceError(f"This invitation is {locked.state}; only an open invitation is sent.")
    address = email_checked(email) if email is not None else locked.email
    if not address:
        raise FieldErrors({"email": "This invitation has no e-mail address: give one to send it to."})
    token = secrets.token_urlsafe(TOKEN_BYTES)
    before = {"invitation": locked.pk, "email": locked.email, "mail_state": locked.mail_state}
    locked.token_hash = token_hash(token)
    locked.email = address
    locked.mail_state = Invitation.Mail.SENDING
    locked.mail_attempts += 1
    locked.save(update_fields=["token_hash", "email", "mail_state", "mail_attempts"])
    study_audit(study=locked.study, actor=actor, action="invitation_send", before=before,
                after={"invitation": locked.pk, "email": address, "attempt": locked.mail_attempts})
    _send_after_commit(locked, token, base_url)
    return locked, token
