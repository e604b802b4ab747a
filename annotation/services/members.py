"""A study's members and invitations: add, change roles, deactivate; invite by a one-time link.

Every change is one transaction and one audit event of the study (its history page). The role
rules are membership_grant's: nobody is both annotator and researcher of one study; a study
keeps at least one study admin. Nobody reviews their own work: the database refuses it
(annotation_not_reviewed_by_its_annotator), whatever roles a person holds.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth import get_user_model, password_validation
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotation.errors import FieldErrors, ServiceError
from annotation.models import Annotation, AuditEvent, ConsentRecord, Invitation, Membership, Study
from annotation.rules import workflow
from annotation.services.studies import membership_grant, study_audit
from annotation.services.study_state import Write, study_require

Role = Membership.Role
# 32 random bytes: 256 bits, of which the link cannot be guessed.
TOKEN_BYTES = 32
INVITATION_DAYS_DEFAULT = 7
INVITATION_DAYS_MAX = 30
NOTE_MAX = 200


def roles_problem(roles: object) -> str | None:
    """Why `roles` cannot be held together by one person of a study, or None."""
    if not isinstance(roles, list) or not roles:
        return "Choose at least one role."
    unknown = [role for role in roles if role not in Role.values]
    if unknown:
        return f"Unknown role {unknown[0]!r:.30}; roles are {', '.join(Role.values)}."
    if Role.ANNOTATOR in roles and Role.RESEARCHER in roles:
        return ("Nobody is both annotator and researcher of one study: a researcher sees which model "
                "wrote each caption, and annotators work blind to the models.")
    return None


def _checked_roles(roles: object) -> list[str]:
    problem = roles_problem(roles)
    if problem:
        raise FieldErrors({"roles": problem})
    return sorted(set(roles), key=Role.values.index)  # type: ignore[arg-type]


def roles_of(*, study: Study, user) -> list[str]:
    held = set(Membership.objects.filter(study=study, user=user).values_list("role", flat=True))
    return [role for role in Role.values if role in held]


def _keep_an_admin(study: Study, user, roles_after: list[str]) -> None:
    if Role.ADMIN in roles_after:
        return
    others = Membership.objects.filter(study=study, role=Role.ADMIN).exclude(user=user).exists()
    if not others:
        raise FieldErrors({"roles": f"{user.get_username()} is the study's only study admin; "
                                    "make someone else study admin first."})


def _release_claims(study: Study, user, actor) -> int:
    """Give the person's review claims in the study back to the queue; their decisions stay."""
    claimed = list(Annotation.objects.filter(
        caption__clip__study=study, state=workflow.IN_REVIEW, reviewer=user
    ).values_list("pk", flat=True))
    if not claimed:
        return 0
    Annotation.objects.filter(pk__in=claimed, state=workflow.IN_REVIEW, reviewer=user).update(
        state=workflow.SUBMITTED, claim_expires_at=None, version=F("version") + 1
    )
    AuditEvent.objects.bulk_create([
        AuditEvent(study=study, annotation_id=pk, actor=actor, action="release",
                   before={"state": workflow.IN_REVIEW, "reviewer": user.get_username()},
                   after={"state": workflow.SUBMITTED, "why": "the reviewer's roles changed"})
        for pk in claimed
    ])
    return len(claimed)


@transaction.atomic
def member_add(*, study: Study, actor, user, roles: list[str]) -> list[str]:
    """Make an existing account a member with `roles`; audited as `member_add` (as
    `site_admin_join` when a site admin adds themselves)."""
    study_require(study, Write.MEMBERS)
    roles = _checked_roles(roles)
    Study.objects.select_for_update().filter(pk=study.pk).first()
    held = roles_of(study=study, user=user)
    if held:
        raise FieldErrors({"username": f"{user.get_username()} is already a member ({', '.join(held)}); "
                                       "change their roles instead."})
    for role in roles:
        membership_grant(study=study, user=user, role=role)
    action = "site_admin_join" if actor is not None and actor.pk == user.pk else "member_add"
    study_audit(study=study, actor=actor, action=action, before={},
                after={"user": user.get_username(), "roles": roles})
    return roles


@transaction.atomic
def member_roles_set(*, study: Study, actor, user, roles: list[str]) -> list[str]:
    """Give a member exactly `roles`; audited as `member_roles`. Losing the reviewer role
    releases their review claims."""
    study_require(study, Write.MEMBERS)
    roles = _checked_roles(roles)
    Study.objects.select_for_update().filter(pk=study.pk).first()
    held = roles_of(study=study, user=user)
    if not held:
        raise FieldErrors({"username": f"{user.get_username()} is not a member of this study."})
    if held == roles:
        return roles
    _keep_an_admin(study, user, roles)
    Membership.objects.filter(study=study, user=user).exclude(role__in=roles).delete()
    for role in roles:
        membership_grant(study=study, user=user, role=role)
    released = _release_claims(study, user, actor) if Role.REVIEWER in held and Role.REVIEWER not in roles else 0
    after: dict = {"user": user.get_username(), "roles": roles}
    if released:
        after["claims_released"] = released
    study_audit(study=study, actor=actor, action="member_roles",
                before={"user": user.get_username(), "roles": held}, after=after)
    return roles


@transaction.atomic
def member_deactivate(*, study: Study, actor, user) -> int:
    """The person is no longer a member: every role goes, their review claims go back to the
    queue (the number is returned); their work stays, attributed to them. Audited as
    `member_deactivate`. Adding them again (or an invitation) makes them a member again."""
    study_require(study, Write.MEMBERS)
    Study.objects.select_for_update().filter(pk=study.pk).first()
    held = roles_of(study=study, user=user)
    if not held:
        raise FieldErrors({"username": f"{user.get_username()} is not a member of this study."})
    _keep_an_admin(study, user, [])
    released = _release_claims(study, user, actor)
    Membership.objects.filter(study=study, user=user).delete()
    study_audit(study=study, actor=actor, action="member_deactivate",
                before={"user": user.get_username(), "roles": held},
                after={"user": user.get_username(), "roles": [], "claims_released": released})
    return released


@dataclass(frozen=True)
class Member:
    username: str
    roles: list[str]
    since: object
    active: bool
    consent: tuple[int, object] | None = None  # (the newest consent version accepted, when)


def members_list(*, study: Study) -> list[Member]:
    """The members, then those deactivated (who hold no role now), by name, each with the
    newest version of the study's consent they accepted and when (None: none)."""
    accepted: dict[str, tuple[int, object]] = {}
    for username, number, at in (ConsentRecord.objects.filter(study=study).order_by("user_id", "number")
                                 .values_list("user__username", "number", "accepted_at")):
        accepted[username] = (number, at)
    rows: dict[str, Member] = {}
    for username, role, created in Membership.objects.filter(study=study).values_list(
        "user__username", "role", "created_at"
    ).order_by("created_at"):
        member = rows.setdefault(username, Member(username, [], created, True, accepted.get(username)))
        member.roles.append(role)
    for member in rows.values():
        member.roles.sort(key=Role.values.index)
    gone = {}
    for event in AuditEvent.objects.filter(study=study, action="member_deactivate").order_by("at"):
        name = event.before.get("user")
        if name and name not in rows:
            gone[name] = Member(name, [], event.at, False, accepted.get(name))
    active = sorted(rows.values(), key=lambda m: m.username)
    return active + sorted(gone.values(), key=lambda m: m.username)


# --------------------------------------------------------------------------- invitations


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


EMAIL_MAX = 254


def email_problem(email: object) -> str | None:
    """Why `email` is not an address an invitation can be sent to, or None."""
    if not isinstance(email, str) or len(email) > EMAIL_MAX:
        return f"An e-mail address has at most {EMAIL_MAX} characters."
    try:
        validate_email(email)
    except ValidationError:
        return f"{email!r:.80} is not an e-mail address."
    return None


@transaction.atomic
def invitation_create(
    *, study: Study, actor, roles: list[str], note: str = "", days: int = INVITATION_DAYS_DEFAULT,
    email: str = "",
) -> tuple[Invitation, str]:
    """A new invitation and its token: the only time the token exists outside the link (the
    database keeps its sha256). `email`, when given, is the address it is for (sending it is
    annotation.services.invitation_mail's). Audited as `invitation_create`."""
    study_require(study, Write.MEMBERS)
    errors = {}
    email = email.strip() if isinstance(email, str) else email
    if email:
        problem = email_problem(email)
        if problem:
            errors["email"] = problem
    problem = roles_problem(roles)
    if problem:
        errors["roles"] = problem
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= INVITATION_DAYS_MAX:
        errors["days"] = f"An invitation lasts from 1 to {INVITATION_DAYS_MAX} days; {days!r:.20} is not."
    if not isinstance(note, str) or len(note) > NOTE_MAX or "\x00" in note:
        errors["note"] = f"The note is text of at most {NOTE_MAX} characters."
    if errors:
        raise FieldErrors(errors)
    roles = _checked_roles(roles)
    token = secrets.token_urlsafe(TOKEN_BYTES)
    invitation = Invitation.objects.create(
        study=study, token_hash=token_hash(token), roles=roles, note=note.strip(), created_by=actor,
        expires_at=timezone.now() + timedelta(days=days), email=email or "",
    )
    after = {"invitation": invitation.pk, "roles": roles, "note": invitation.note,
             "expires_at": invitation.expires_at.isoformat()}
    if invitation.email:
        after["email"] = invitation.email
    study_audit(study=study, actor=actor, action="invitation_create", before={}, after=after)
    return invitation, token


@transaction.atomic
def invitation_revoke(*, invitation: Invitation, actor) -> Invitation:
    """The link stops working; audited as `invitation_revoke`. Refused once it was used."""
    study_require(invitation.study, Write.MEMBERS)
    now = timezone.now()
    revoked = Invitation.objects.filter(
        pk=invitation.pk, accepted_at__isnull=True, revoked_at__isnull=True
    ).update(revoked_at=now, revoked_by=actor)
    invitation.refresh_from_db()
    if not revoked:
        raise ServiceError(f"This invitation is {invitation.state}; there is nothing to revoke.")
    study_audit(study=invitation.study, actor=actor, action="invitation_revoke",
                before={"invitation": invitation.pk, "state": "open"},
                after={"invitation": invitation.pk, "state": "revoked"})
    return invitation


class InvitationInvalid(ServiceError):
    """The link is unknown, used, revoked or expired."""


def invitation_find(token: str) -> Invitation:
    """The open invitation of the link, or InvitationInvalid saying why it cannot be used."""
    invitation = None
    if isinstance(token, str) and 0 < len(token) <= 100:
        invitation = Invitation.objects.select_related("study").filter(token_hash=token_hash(token)).first()
    if invitation is None:
        raise InvitationInvalid("This invitation link is not valid. Ask the study admin for a new one.")
    state = invitation.state
    if state == "accepted":
        raise InvitationInvalid("This invitation link was already used; each link works once.")
    if state == "revoked":
        raise InvitationInvalid("This invitation was withdrawn by the study's admins.")
    if state == "expired":
        raise InvitationInvalid(
            f"This invitation expired on {invitation.expires_at:%Y-%m-%d %H:%M} UTC. Ask the study admin for a new one."
        )
    return invitation


def _accept(invitation: Invitation, user) -> list[str]:
    # An invitation made while the study ran is refused once it closed: it would add a member.
    study_require(invitation.study, Write.MEMBERS)
    held = roles_of(study=invitation.study, user=user)
    problem = roles_problem(sorted(set(held) | set(invitation.roles)))
    if problem:
        raise ServiceError(f"{user.get_username()} is already {', '.join(held)} of this study: {problem}")
    used = Invitation.objects.filter(
        pk=invitation.pk, accepted_at__isnull=True, revoked_at__isnull=True, expires_at__gt=timezone.now()
    ).update(accepted_at=timezone.now(), accepted_by=user)
    if not used:  # taken, revoked or expired since it was read
        invitation_find_again = Invitation.objects.get(pk=invitation.pk)
        raise InvitationInvalid(f"This invitation is {invitation_find_again.state} and cannot be used.")
    for role in invitation.roles:
        membership_grant(study=invitation.study, user=user, role=role)
    study_audit(study=invitation.study, actor=user, action="invitation_accept",
                before={"invitation": invitation.pk, "roles": held},
                after={"invitation": invitation.pk, "user": user.get_username(),
                       "roles": roles_of(study=invitation.study, user=user),
                       "invited_by": invitation.created_by.get_username()})
    return list(invitation.roles)


@transaction.atomic
def invitation_accept(*, token: str, user) -> Invitation:
    """The signed-in `user` takes the invitation: they get exactly the invited roles."""
    invitation = invitation_find(token)
    _accept(invitation, user)
    return invitation


@transaction.atomic
def invitation_accept_new_account(*, token: str, username: str, password: str, email: str = ""):
    """A new account made from the invitation, holding exactly the invited roles (one
    transaction: a refused role or password creates nothing). Returns the account."""
    invitation = invitation_find(token)
    User = get_user_model()
    errors: dict[str, str] = {}
    username = (username or "").strip()
    try:
        User._meta.get_field("username").run_validators(username)
        if not username:
            raise ValidationError("Choose a user name.")
    except ValidationError as exc:
        errors["username"] = " ".join(exc.messages)
    if "username" not in errors and User.objects.filter(username__iexact=username).exists():
        errors["username"] = (f"The user name {username!r} is taken. If it is yours, sign in first, "
                              "then open the link again.")
    if email:
        try:
            validate_email(email)
        except ValidationError:
            errors["email"] = f"{email!r:.80} is not an e-mail address; leave it empty or correct it."
    candidate = User(username=username, email=email or "")
    try:
        password_validation.validate_password(password or "", user=candidate)
    except ValidationError as exc:
        errors["password"] = " ".join(exc.messages)
    if errors:
        raise FieldErrors(errors)
    user = User.objects.create_user(username=username, password=password, email=email or "")
    _accept(invitation, user)
    return user
