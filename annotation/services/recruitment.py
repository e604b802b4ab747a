"""Recruitment links for crowd platforms: made and closed by a study admin; opened by
participants, who become annotators of the study without a password; their completion.

- A link's token is 256 random bits, stored as its sha256 (like an invitation's); the role is
  annotator, always, and the link belongs to one study.
- A participant id is looked up as HMAC-SHA256 under the study's own key (RecruitmentKey):
  the same id in the same study is the same participant (the database's unique constraint
  holds it against two tabs racing), and people see only the pseudonym derived from it. For
  paying, the id is also kept sealed (AES-GCM, annotation.rules.sealed_ids) under a key derived
  from SECRET_KEY and the study's key: only the study admins' payment report opens it
  (annotation.services.payments). A participant from before who comes back is sealed then.
- A participant joins only while the study runs (Write.RECRUIT), the link is open, not expired
  and not full; coming back resumes, whatever the link's state, while the study runs.
- A new participant gets `quota` captions that nobody has yet (or only people who withdrew had:
  annotation.services.withdrawal), under the study's design
  (annotation.rules.recruitment.pick_items, then annotations_assign).
- When the study asks for consent (annotation.services.consent), a new participant joins only
  with the current version accepted, recorded as they join; someone who declines is counted on
  the link (`declines`, :func:`recruitment_decline`) and nothing else is kept of them.
- A participant who withdrew cannot come back, through any link (RecruitmentRefused, withdrawn).
- A link may give each participant a time allowed (`time_allowed` minutes, the platform's
  maximum time), from when they join (``Participant.time_out_at``). Once it has passed and they
  have not completed, they have timed out: their items not submitted are free for new
  participants exactly as a withdrawn person's are (annotation.selectors.counted.
  holding_annotations), their submitted work still counts, and coming back is refused politely
  (RecruitmentRefused, timed_out). Without a time allowed, nobody times out.
- When every item they were given is done (submitted or further), they have completed: the
  time is recorded once and the completion code shown from then on.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet, Subquery
from django.utils import timezone

from annotation.errors import FieldErrors, ServiceError
from annotation.models import (
    Annotation,
    Caption,
    Membership,
    Participant,
    RecruitmentKey,
    RecruitmentLink,
    Study,
    Withdrawal,
)
from annotation.prepared import prepared
from annotation.rules import recruitment, sealed_ids, workflow
from annotation.rules.assignment import ONE_MODEL_PER_CLIP, Item
from annotation.selectors.counted import holding_annotations
from annotation.services.annotation_common import timed_out_message
from annotation.services.assigning import annotations_assign
from annotation.services.consent import consent_asked, consent_record
from annotation.services.members import TOKEN_BYTES, token_hash
from annotation.services.studies import membership_grant, study_audit
from annotation.services.study_state import Write, study_require

WAITING = (workflow.RETURNED, workflow.IN_PROGRESS, workflow.ASSIGNED)
LINK_DAYS_MAX = 365


class RecruitmentRefused(ServiceError):
    """The link cannot take this participant now; the message says why, politely. `kind` is
    one of unknown, closed, expired, full, no_work, bad_id, consent, withdrawn, timed_out (the pages'
    status follows it)."""

    def __init__(self, message: str, *, kind: str):
        super().__init__(message)
        self.kind = kind


# --------------------------------------------------------------------------- links


@transaction.atomic
def recruitment_link_create(
    *,
    study: Study,
    actor,
    cap: int,
    quota: int,
    platform: str = recruitment.PROLIFIC,
    label: str = "",
    days: int | None = None,
    participant_param: str = "",
    study_param: str | None = None,
    session_param: str | None = None,
    completion_code: str = "",
    completion_url: str = "",
    time_allowed: int | None = None,
) -> tuple[RecruitmentLink, str]:
    """A new link for annotators and its token (the only time the token exists outside the
    link). Parameter names default to the platform's. Audited as `recruitment_link_create`."""
    study_require(study, Write.MEMBERS)
    errors: dict[str, str] = {}
    if platform not in recruitment.PLATFORM_PARAMS:
        errors["platform"] = f"The platform is one of {', '.join(recruitment.PLATFORM_PARAMS)}."
        platform = recruitment.OTHER
    defaults = recruitment.PLATFORM_PARAMS[platform]
    participant_param = participant_param or defaults[0]
    study_param = defaults[1] if study_param is None else study_param
    session_param = defaults[2] if session_param is None else session_param
    for field, name, required in (("participant_param", participant_param, True),
                                  ("study_param", study_param, False), ("session_param", session_param, False)):
        if name or required:
            problem = recruitment.param_name_problem(name, field=field.removesuffix("_param"))
            if problem:
                errors[field] = problem
    names = [n for n in (participant_param, study_param, session_param) if n]
    if len(set(names)) != len(names) and "participant_param" not in errors:
        errors["participant_param"] = "The participant, study and session parameters need three different names."
    for field, value, most in (("cap", cap, recruitment.CAP_MAX), ("quota", quota, recruitment.QUOTA_MAX)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
            what = "participants the link takes" if field == "cap" else "items each participant does"
            errors[field] = f"The {field} ({what}) is a whole number from 1 to {most}; {value!r:.20} is not."
    if days is not None and (isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= LINK_DAYS_MAX):
        errors["days"] = f"A link lasts from 1 to {LINK_DAYS_MAX} days, or until it is closed; {days!r:.20} is not."
    if time_allowed is not None and (isinstance(time_allowed, bool) or not isinstance(time_allowed, int)
                                     or not 1 <= time_allowed <= recruitment.TIME_ALLOWED_MAX):
        errors["time_allowed"] = (f"The time allowed is a whole number of minutes from 1 to "
                                  f"{recruitment.TIME_ALLOWED_MAX}, or empty for no limit; "
                                  f"{time_allowed!r:.20} is not.")
    if not isinstance(label, str) or len(label) > recruitment.LABEL_MAX or "\x00" in label:
        errors["label"] = f"The label is text of at most {recruitment.LABEL_MAX} characters."
    completion_code = completion_code.strip() if isinstance(completion_code, str) else completion_code
    if completion_code:
        problem = recruitment.code_problem(completion_code)
        if problem:
            errors["completion_code"] = problem
    problem = recruitment.completion_url_problem(completion_url)
    if problem:
        errors["completion_url"] = problem
    if errors:
        raise FieldErrors(errors)
    _study_key(study)  # made now, so that opening a link never writes it
    token = secrets.token_urlsafe(TOKEN_BYTES)
    link = RecruitmentLink.objects.create(
        study=study, token_hash=token_hash(token), label=label.strip(), platform=platform,
        participant_param=participant_param, study_param=study_param, session_param=session_param,
        cap=cap, quota=quota, expires_at=timezone.now() + timedelta(days=days) if days else None,
        time_allowed=time_allowed,
        completion_code=completion_code or secrets.token_hex(4).upper(), completion_url=completion_url or "",
        created_by=actor,
    )
    study_audit(study=study, actor=actor, action="recruitment_link_create", before={}, after={
        "link": link.pk, "label": link.label, "platform": platform, "cap": cap, "quota": quota,
        "expires_at": link.expires_at.isoformat() if link.expires_at else None, "time_allowed": time_allowed})
    return link, token


@transaction.atomic
def recruitment_link_close(*, link: RecruitmentLink, actor) -> RecruitmentLink:
    """No one new joins through the link (its participants may still finish while the study
    runs); audited as `recruitment_link_close`. Refused once closed."""
    study_require(link.study, Write.MEMBERS)
    closed = RecruitmentLink.objects.filter(pk=link.pk, closed_at__isnull=True).update(
        closed_at=timezone.now(), closed_by=actor)
    link.refresh_from_db()
    if not closed:
        raise ServiceError("This recruitment link is already closed.")
    study_audit(study=link.study, actor=actor, action="recruitment_link_close",
                before={"link": link.pk, "state": "open"}, after={"link": link.pk, "state": "closed"})
    return link


def recruitment_links_at_closing(study: Study) -> None:
    """Closing the study closes its links (a lifecycle closing hook, inside the close)."""
    RecruitmentLink.objects.filter(study=study, closed_at__isnull=True).update(closed_at=timezone.now())


def recruitment_link_find(token: object) -> RecruitmentLink:
    """The link of `token`, whatever its state; RecruitmentRefused (unknown) when there is none."""
    link = None
    if isinstance(token, str) and 0 < len(token) <= 100:
        link = RecruitmentLink.objects.select_related("study").filter(token_hash=token_hash(token)).first()
    if link is None:
        raise RecruitmentRefused("This study link is not valid. Open the study again from your platform's page.",
                                 kind="unknown")
    return link


def link_counts(links) -> dict[int, dict[str, int]]:
    """{link id: {"joined": n, "completed": n}} in one query."""
    rows = (Participant.objects.filter(link__in=links).order_by().values("link_id")
            .annotate(joined=Count("pk"), completed=Count("pk", filter=Q(completed_at__isnull=False))))
    return {row["link_id"]: {"joined": row["joined"], "completed": row["completed"]} for row in rows}


# --------------------------------------------------------------------------- participants


def _study_key(study: Study) -> bytes:
    key = RecruitmentKey.objects.filter(study=study).values_list("secret", flat=True).first()
    if key is None:
        RecruitmentKey.objects.bulk_create([RecruitmentKey(study=study, secret=secrets.token_hex(32))],
                                           ignore_conflicts=True)
        key = RecruitmentKey.objects.values_list("secret", flat=True).get(study=study)
    return bytes.fromhex(key)


def participant_hash(study: Study, participant_id: str) -> str:
    """The keyed hash under which the study knows a participant id."""
    return hmac.new(_study_key(study), participant_id.encode("utf-8"), hashlib.sha256).hexdigest()


def participant_id_keys(study: Study) -> list[bytes]:
    """The keys that may open the study's sealed participant ids: under SECRET_KEY first, then
    under each of SECRET_KEY_FALLBACKS (a rotated site secret still opens what it sealed)."""
    study_secret = _study_key(study).hex()
    site_secrets = [settings.SECRET_KEY, *settings.SECRET_KEY_FALLBACKS]
    return [sealed_ids.id_key(secret, study_secret) for secret in site_secrets]


def participant_id_seal(study: Study, participant_id: str, digest: str) -> str:
    """The participant id sealed for the study's payment report (under the current key)."""
    return sealed_ids.seal(participant_id_keys(study)[0], participant_id, study=study.pk, digest=digest)


@dataclass(frozen=True)
class Joined:
    participant: Participant
    resumed: bool


def participant_id_from(link: RecruitmentLink, params: Mapping[str, object]) -> str:
    """The participant id of the request's parameters (the link's names); RecruitmentRefused
    (bad_id) naming the parameter when it is missing or malformed, or a study or session id is."""
    for name, required in ((link.participant_param, True), (link.study_param, False), (link.session_param, False)):
        if not name:
            continue
        problem = recruitment.id_problem(params.get(name), name=name, required=required)
        if problem:
            raise RecruitmentRefused(problem, kind="bad_id")
    return params[link.participant_param]  # type: ignore[return-value]


def refuse_new(link: RecruitmentLink, now: datetime | None = None) -> None:
    """RecruitmentRefused when the link takes no one new: closed, expired or full."""
    now = now or timezone.now()
    if link.closed_at:
        raise RecruitmentRefused("This study is no longer taking participants. Thank you for your interest; "
                                 "please return it on your platform.", kind="closed")
    if link.expires_at and link.expires_at <= now:
        raise RecruitmentRefused(f"This study link expired on {link.expires_at:%Y-%m-%d %H:%M} UTC. Thank you for "
                                 "your interest; please return it on your platform.", kind="expired")
    if Participant.objects.filter(link=link).count() >= link.cap:
        raise RecruitmentRefused("This study has all the participants it needs. Thank you for your interest; "
                                 "please return it on your platform.", kind="full")


def _free(study_id: int) -> QuerySet[Caption]:
    """The study's captions nobody has yet: no annotation, or only those of people who withdrew
    or ran out of time (their claims released)."""
    held = holding_annotations(Annotation.objects.filter(caption_id=OuterRef("pk")))
    return Caption.objects.filter(clip__study_id=study_id).exclude(Exists(held))


# Every join reads these under the study's lock, so they are prepared and read ids and counts
# only: the clips with a free caption (for the order in which the participant meets them), and
# per model its free captions (the picks keep the models' pools even). Then the free captions
# of the few clips a join walks, not the study's.
@prepared
def _free_clips(*, study_id: int):
    return _free(study_id).order_by().values("clip_id").distinct()


@prepared
def _free_per_model(*, study_id: int):
    return _free(study_id).order_by().values("model_id").annotate(n=Count("pk"))


def _free_captions(study_id: int, clips: Sequence[int] | None = None) -> dict[int, list[Item]]:
    """The free captions by clip, in the order of their models' ids: of `clips`, or of every clip."""
    captions = _free(study_id) if clips is None else _free(study_id).filter(clip_id__in=clips)
    left: dict[int, list[Item]] = defaultdict(list)
    rows = captions.order_by("clip_id", "model_id", "pk").values_list("pk", "clip_id", "model_id")
    for pk, clip_id, model_id in rows:
        left[clip_id].append(Item(pk, clip_id, model_id))
    return left


def _pick(study: Study, quota: int, seed: str, *, one_per_clip: bool) -> list[Item]:
    """What recruitment.pick_items picks from the study's free captions, reading those of the
    clips it walks only."""
    order, rng = recruitment.clip_order([row["clip_id"] for row in _free_clips(study_id=study.pk)], seed)
    per_model = {row["model_id"]: row["n"] for row in _free_per_model(study_id=study.pk)}
    walked = recruitment.clips_walked(order, quota=quota, one_per_clip=one_per_clip)
    left = _free_captions(study.pk, walked)
    if len(left) < len(walked):  # taken between the reads (an admin's assignment): pick from them all
        every = [item for items in _free_captions(study.pk).values() for item in items]
        return recruitment.pick_items(items=every, quota=quota, one_per_clip=one_per_clip, seed=seed)
    return recruitment.pick_from(order=order, left=left, per_model=per_model, quota=quota,
                                 one_per_clip=one_per_clip, rng=rng)


def _give_items(study: Study, user, quota: int, seed: str) -> int:
    """Assign the new participant up to `quota` captions nobody has yet; how many were given."""
    one_per_clip = study.assignment_design == ONE_MODEL_PER_CLIP
    while True:
        picked = _pick(study, quota, seed, one_per_clip=one_per_clip)
        if not picked:
            return 0
        try:
            with transaction.atomic():
                report = annotations_assign(
                    study=study, annotators=[user],
                    captions=Caption.objects.filter(pk__in=[item.caption for item in picked]))
        except ServiceError:
            if one_per_clip:
                raise
            one_per_clip = True  # the spread design could not space them: one caption per clip
            continue
        return report.created


@transaction.atomic
def participant_join(*, link: RecruitmentLink, params: Mapping[str, object], consent: int | None = None) -> Joined:
    """The participant of the request's ids: resumed when the study knows the id, else made (an
    account without a password, an annotator with `quota` items). Refused, creating nothing,
    when the study does not run (StudyStateRefused), or, for someone new, when the link is
    closed, expired or full, the study has no work left, or it asks for consent and `consent`
    is not its current version (RecruitmentRefused). `consent`, the version the person
    accepted on the page, is recorded for them (new or coming back)."""
    participant_id = participant_id_from(link, params)
    # One join at a time per study: the cap and the captions given are counted under this lock,
    # and closing the study (which updates this row) waits for it or is waited for. FOR NO KEY
    # UPDATE, not FOR UPDATE: every autosave inserts an audit row whose foreign key share-locks
    # the study's key, and a join must neither hold those back nor deadlock with them.
    study = Study.objects.select_for_update(no_key=True).get(pk=link.study_id)
    study_require(study, Write.RECRUIT)
    asked = consent_asked(study)
    if asked is not None and consent is not None and consent != asked.number:
        raise RecruitmentRefused(f"The study's consent text changed (it is now version {asked.number}): read it "
                                 "again and accept it to take part.", kind="consent")
    digest = participant_hash(study, participant_id)
    now = timezone.now()
    known = Participant.objects.select_related("user").filter(study=study, pid_hash=digest).first()
    if known is not None:
        withdrawn = Withdrawal.objects.filter(study=study, user=known.user).values_list("at", flat=True).first()
        if withdrawn is not None:
            raise RecruitmentRefused(f"You withdrew from this study on {withdrawn:%Y-%m-%d %H:%M} UTC, so you cannot "
                                     "join it again. Thank you for your part.", kind="withdrawn")
        if not Membership.objects.filter(study=study, user=known.user, role=Membership.Role.ANNOTATOR).exists():
            raise RecruitmentRefused("You no longer take part in this study (its admins ended your participation). "
                                     "Thank you for your work.", kind="closed")
        if timed_out(known, now) and not participant_complete(participant=known):
            raise RecruitmentRefused(timed_out_message(known.time_out_at), kind="timed_out")
        seen: dict[str, object] = {"last_seen_at": now}
        if not known.pid_sealed:  # joined before ids were kept for paying: kept from now on
            seen["pid_sealed"] = known.pid_sealed = participant_id_seal(study, participant_id, digest)
        Participant.objects.filter(pk=known.pk).update(**seen)
        if asked is not None and consent is not None:
            consent_record(study=study, user=known.user, version=consent)
        return Joined(known, resumed=True)
    if asked is not None and consent is None:
        raise RecruitmentRefused("This study asks you to read and accept its consent before you take part.",
                                 kind="consent")
    link = RecruitmentLink.objects.select_for_update().get(pk=link.pk)
    refuse_new(link, now)
    pseudonym = recruitment.pseudonym_of(digest)
    User = get_user_model()
    user = User(username=f"{study.slug}-{pseudonym.lower()}")
    user.set_unusable_password()
    try:
        with transaction.atomic():
            user.save()
            participant = Participant.objects.create(
                study=study, link=link, user=user, pid_hash=digest, pseudonym=pseudonym, last_seen_at=now,
                pid_sealed=participant_id_seal(study, participant_id, digest),
                time_out_at=now + timedelta(minutes=link.time_allowed) if link.time_allowed else None)
    except IntegrityError:
        # The same id joined a moment ago through a request that did not wait for our lock (a
        # database without row locks): that participant it is.
        known = Participant.objects.select_related("user").filter(study=study, pid_hash=digest).first()
        if known is None:
            raise
        return Joined(known, resumed=True)
    membership_grant(study=study, user=user, role=Membership.Role.ANNOTATOR)
    if asked is not None:
        consent_record(study=study, user=user, version=asked.number)
    given = _give_items(study, user, link.quota, seed=f"{study.assignment_seed}:{digest}")
    if not given:
        raise RecruitmentRefused("This study has no work left for new participants. Thank you for your "
                                 "interest; please return it on your platform.", kind="no_work")
    Participant.objects.filter(pk=participant.pk).update(assigned=given)
    participant.assigned = given
    study_audit(study=study, actor=user, action="participant_join", before={},
                after={"participant": pseudonym, "user": user.get_username(), "link": link.pk, "items": given})
    return Joined(participant, resumed=False)


@transaction.atomic
def recruitment_decline(*, link: RecruitmentLink) -> int:
    """Someone declined the study's consent on the link: one more on its count of declines, the
    only thing kept (no account, no id, no hash, no audit event). Give the count now."""
    study_require(link.study, Write.RECRUIT)
    RecruitmentLink.objects.filter(pk=link.pk).update(declines=F("declines") + 1)
    return RecruitmentLink.objects.values_list("declines", flat=True).get(pk=link.pk)


def timed_out(participant: Participant, now: datetime | None = None) -> bool:
    """Whether the participant's time allowed has passed without their completing (the rule of
    annotation.selectors.counted.holding_annotations, for one participant)."""
    return (participant.completed_at is None and participant.time_out_at is not None
            and participant.time_out_at <= (now or timezone.now()))


@prepared
def _participant_read(*, study_id: int, user_id: int):
    return Participant.objects.select_related("link").filter(study_id=study_id, user_id=user_id)  # one at most


def participant_of(*, study: Study, user) -> Participant | None:
    if not getattr(user, "is_authenticated", False):
        return None
    found = _participant_read(study_id=study.pk, user_id=user.pk)
    return found[0] if found else None


def participant_progress(participant: Participant) -> tuple[int, int]:
    """(items done, items in all) of the participant's queue."""
    counts = dict(Annotation.objects.filter(caption__clip__study_id=participant.study_id,
                                            annotator_id=participant.user_id)
                  .order_by().values("state").annotate(n=Count("pk")).values_list("state", "n"))
    return recruitment.progress(counts, waiting=WAITING)


@transaction.atomic
def participant_complete(*, participant: Participant) -> bool:
    """Whether the participant has completed: recorded (once, audited as `participant_complete`)
    when every item they were given is done, or was before. No new work follows completion."""
    if participant.completed_at:
        return True
    done, total = participant_progress(participant)
    if total == 0 or done < total:
        return False
    now = timezone.now()
    if Participant.objects.filter(pk=participant.pk, completed_at__isnull=True).update(completed_at=now):
        participant.completed_at = now
        study_audit(study=participant.study, actor=participant.user, action="participant_complete", before={},
                    after={"participant": participant.pseudonym, "items": total})
    else:
        participant.refresh_from_db(fields=["completed_at"])
    return True


@dataclass(frozen=True)
class ParticipantRow:
    pseudonym: str
    username: str
    link: int
    joined_at: datetime
    done: int
    assigned: int
    completed_at: datetime | None
    # working, completed, timed out or withdrawn (annotation.rules.recruitment.participant_state),
    # and since when (None while working).
    state: str
    state_at: datetime | None
    time_out_at: datetime | None


def participants_list(*, study: Study) -> list[ParticipantRow]:
    """The study's participants by when they joined, with their progress and where they stand
    (two queries)."""
    people = list(Participant.objects.filter(study=study).select_related("user").annotate(
        withdrawn_at=Subquery(Withdrawal.objects.filter(study_id=OuterRef("study_id"), user_id=OuterRef("user_id"))
                              .values("at")[:1])))
    counts: dict[int, dict[str, int]] = {}
    for annotator, state, n in (Annotation.objects.filter(caption__clip__study=study,
                                                          annotator__in=[p.user_id for p in people])
                                .order_by().values("annotator_id", "state").annotate(n=Count("pk"))
                                .values_list("annotator_id", "state", "n")):
        counts.setdefault(annotator, {})[state] = n
    now = timezone.now()
    rows = []
    for person in people:
        done, total = recruitment.progress(counts.get(person.user_id, {}), waiting=WAITING)
        state, since = recruitment.participant_state(completed_at=person.completed_at, time_out_at=person.time_out_at,
                                                     withdrawn_at=person.withdrawn_at, now=now)
        rows.append(ParticipantRow(person.pseudonym, person.user.get_username(), person.link_id, person.joined_at,
                                   done, total, person.completed_at, state, since, person.time_out_at))
    return rows
