"""Who may do what in a study. Views and the API use these; services trust their callers."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db.models import Exists, OuterRef
from django.http import Http404
from rest_framework.exceptions import NotAuthenticated, NotFound
from rest_framework.permissions import BasePermission

from annotation.models import Membership, Study, StudyState
from annotation.prepared import PreparedRead, prepared

Role = Membership.Role
# Roles that may see which model wrote a caption (everyone else sees the neutral alias).
SEES_MODEL_IDENTITY = {Role.ADMIN, Role.RESEARCHER}
# The refusals a site admin without a role meets wherever they try (API, pages, Django admin).
SETTINGS_REFUSAL = "Only the study's admins change its settings."
MEMBERS_REFUSAL = "Only the study's admins add members; a site admin may add only themselves."
# Roles that work blind: whoever holds one of them in a study never learns which model wrote a
# caption there, whatever other roles they hold (names seen on one page would unblind their work).
WORKS_BLIND = {Role.ANNOTATOR, Role.REVIEWER, Role.EXPERT}


def _roles_cache(user) -> dict[int, set[str]]:
    """{study id: roles} read so far for this user object (one request's user)."""
    cache = getattr(user, "_redline_roles", None)
    if cache is None:
        cache = user._redline_roles = {}
    return cache


def known_roles(user, study: Study) -> set[str] | None:
    """The person's roles in the study if this request has read them already, else None."""
    return getattr(user, "_redline_roles", {}).get(study.pk)


@prepared
def _roles_read(*, study_id: int, user_id: int):
    return Membership.objects.filter(study_id=study_id, user_id=user_id).values("role")


def roles_of_user(*, study_id, user_id: int) -> dict[str, Exists]:
    """Annotations that say, in a read of a study's rows, which roles the person `user_id` holds
    in the study (`study_id`: the study's id or an expression of it, as OuterRef): one
    `user_is_<role>` each. remember_roles(user, study, row) then answers user_roles without a read."""
    return {f"user_is_{role}": Exists(Membership.objects.filter(study_id=study_id, user_id=user_id, role=role))
            for role in Membership.Role.values}


def remember_roles(user, study: Study, row) -> None:
    """user_roles(user, study) from `row`, read with roles_of_user for this user."""
    _roles_cache(user)[study.pk] = {role for role in Membership.Role.values if getattr(row, f"user_is_{role}")}


@prepared
def _study_read(*, slug: str, user_id: int):
    return Study.objects.select_related("taxonomy").annotate(
        **roles_of_user(study_id=OuterRef("pk"), user_id=user_id)).filter(slug=slug)


def study_read_with_roles(slug: str, user_id: int):
    """The queryset study_with_roles reads, for a read that adds columns to it."""
    return _study_read.queryset(slug=slug, user_id=user_id)


def study_with_roles(user, slug: str, *, read: PreparedRead | None = None) -> Study | None:
    """The study named `slug`, with its taxonomy, and the person's roles there read with it (one
    statement: user_roles then reads nothing); None if there is no such study. `read`: a
    prepared read of study_read_with_roles with more columns, which the study then carries."""
    rows = (read or _study_read)(slug=slug, user_id=user.pk or 0)
    if not rows:
        return None
    study = rows[0]
    if user.is_authenticated:
        remember_roles(user, study, study)
    return study


def user_roles(user, study: Study) -> set[str]:
    if not user.is_authenticated:
        return set()
    cache = _roles_cache(user)
    if study.pk not in cache:
        cache[study.pk] = {row["role"] for row in _roles_read(study_id=study.pk, user_id=user.pk)}
    return cache[study.pk]


def is_member(user, study: Study) -> bool:
    return bool(user_roles(user, study))


def sees_model_identity(user, study: Study) -> bool:
    """Whether the person sees which model wrote a caption: study admins and researchers, but
    never an annotator or QC reviewer of the study, whatever other roles they hold there. Every
    page, API answer, export and release that could name a model asks this."""
    roles = user_roles(user, study)
    return bool(roles & SEES_MODEL_IDENTITY) and not roles & WORKS_BLIND


def blind_message(study: Study) -> str:
    return (f"You annotate or review in study {study.name}, so you work blind there: nothing shows you which "
            "model wrote a caption (scores, profiles and releases by model name included).")


def require_model_identity(user, study: Study) -> None:
    """Refuse (403, saying why) what would name the models to a member who may not see them."""
    if not sees_model_identity(user, study):
        raise PermissionDenied(blind_message(study))


def sees_study_work(user, study: Study) -> bool:
    """Whether the person sees the study's work: its clips and their media, candidate models,
    captions, annotations and queues. While the study is being set up, someone who is only an
    annotator or QC reviewer there sees none of it (the work opens when an admin starts the
    study); its admins and researchers, and site admins reading it, do."""
    if study.state != StudyState.SETUP:
        return True
    roles = user_roles(user, study)
    return bool(roles & SEES_MODEL_IDENTITY) or not roles & WORKS_BLIND


def setup_hidden_message(study: Study) -> str:
    return (f"Study {study.name} is being set up: its clips and captions are shown to annotators and "
            "reviewers once its admin starts it.")


def require_study_work(user, study: Study) -> None:
    """Refuse (404, saying why) what `sees_study_work` hides; pages and the API both call this."""
    if not sees_study_work(user, study):
        raise Http404(setup_hidden_message(study))


def sees_every_caption(user, study: Study) -> bool:
    """Study admins and researchers browse every model's caption of a clip and see which clips
    are manipulated controls. Annotators see only the captions assigned to them, and QC
    reviewers (who review blind) only what they review: knowing the other models' captions, or
    that a clip is a control, would bias their judgement."""
    return bool(user_roles(user, study) & SEES_MODEL_IDENTITY)


def studies_of(user, *, archived: bool = False):
    """The studies a person lists: their own; every study for a site admin (is_staff), who may
    open any of them read-only (is_site_reader) until they add themselves a role. Archived
    studies only with `archived` (they are hidden from lists)."""
    if not user.is_authenticated:
        return Study.objects.none()
    if user.is_staff:
        studies = Study.objects.all()
    else:
        studies = Study.objects.filter(memberships__user=user).distinct()
    return studies if archived else studies.exclude(state=StudyState.ARCHIVED)


# The Django permission that lets a person who is not a site admin create studies (they become
# the new study's admin). Site admins (is_staff) may always.
CREATE_STUDIES_PERMISSION = "annotation.add_study"


def may_create_studies(user) -> bool:
    return bool(user.is_authenticated and (user.is_staff or user.has_perm(CREATE_STUDIES_PERMISSION)))


def is_site_reader(user, study: Study) -> bool:
    """A site admin looking at a study they hold no role in: they see its settings, members
    and history, and act only after adding themselves a role (audited)."""
    return bool(user.is_authenticated and user.is_staff and not user_roles(user, study))


class MayCreateStudies(BasePermission):
    message = "Only site admins and people allowed to create studies may create one."

    def has_permission(self, request, view):
        return may_create_studies(request.user)


def study_from_view(view) -> Study:
    study = getattr(view, "_study", None)
    if study is None:
        study = Study.objects.filter(slug=view.kwargs["slug"]).first()
        if study is None:
            raise NotFound("No such study.")
        view._study = study
    return study


@prepared
def _memberships_read(*, slug: str, user_id: int):
    return Membership.objects.filter(study__slug=slug, user_id=user_id).select_related("study")


def memberships_read(slug: str, user_id: int):
    """The queryset member_study_from_view reads, for a read that adds columns to it."""
    return _memberships_read.queryset(slug=slug, user_id=user_id)


def member_study_from_view(view, user, *, read: PreparedRead | None = None) -> Study:
    """The view's study, for a member; 404 for everyone else, as the pages answer, so that the
    API does not tell outsiders which studies exist (403 would).

    One query: the person's memberships of the study named in the URL, each with its study,
    which fills both the view's study and the person's roles there. `read`: a prepared read of
    memberships_read with more columns; the first membership as read is then the view's
    `_membership_read`."""
    if not user.is_authenticated:
        raise NotAuthenticated()
    study = getattr(view, "_study", None)
    if study is None:
        memberships = (read or _memberships_read)(slug=view.kwargs["slug"], user_id=user.pk)
        if not memberships:
            raise NotFound("No such study.")
        study = view._study = memberships[0].study
        view._membership_read = memberships[0]
        _roles_cache(user)[study.pk] = {m.role for m in memberships}
    if not is_member(user, study):
        raise NotFound("No such study.")
    return study


class IsStudyMember(BasePermission):
    message = "You are not a member of this study."

    def has_permission(self, request, view):
        return is_member(request.user, member_study_from_view(view, request.user))


class SeesStudyWork(BasePermission):
    """After IsStudyMember: the study's work, refused (404, saying why) while it is hidden from
    this person (`sees_study_work`)."""

    def has_permission(self, request, view):
        require_study_work(request.user, study_from_view(view))
        return True


class IsStudyAdmin(BasePermission):
    message = "Only the study's admins may do this."

    def has_permission(self, request, view):
        return Role.ADMIN in user_roles(request.user, member_study_from_view(view, request.user))


def readable_study_from_view(view, user) -> Study:
    """The view's study for a member, or for a site admin (read-only); 404 for everyone else."""
    if not user.is_authenticated:
        raise NotAuthenticated()
    if user.is_staff:
        study = study_from_view(view)
        user_roles(user, study)
        return study
    return member_study_from_view(view, user)


class IsStudyAdminOrSiteReader(BasePermission):
    """Study admins; site admins may read (GET) without a role."""

    message = "Only the study's admins may do this."

    def has_permission(self, request, view):
        study = readable_study_from_view(view, request.user)
        if Role.ADMIN in user_roles(request.user, study):
            return True
        return request.method in ("GET", "HEAD", "OPTIONS") and is_site_reader(request.user, study)


# Who reads how the people of a study worked (the annotator quality page, the work log): its
# admins, by name; its researchers, by pseudonym (annotation.rules.pseudonyms); site admins read it.
PEOPLE_READERS = {Role.ADMIN, Role.RESEARCHER}
PEOPLE_REFUSAL = "Only the study's admins and researchers see how its people worked."


def sees_people(user, study: Study) -> bool:
    """Whether the person sees the study's people by name (its admins, and site admins reading
    it); a researcher sees them by pseudonym."""
    return Role.ADMIN in user_roles(user, study) or is_site_reader(user, study)


def reads_people_work(user, study: Study) -> bool:
    return bool(user_roles(user, study) & PEOPLE_READERS) or is_site_reader(user, study)


class ReadsPeopleWork(BasePermission):
    """Study admins and researchers (GET only), and site admins reading the study."""

    message = PEOPLE_REFUSAL

    def has_permission(self, request, view):
        study = readable_study_from_view(view, request.user)
        return request.method in ("GET", "HEAD", "OPTIONS") and reads_people_work(request.user, study)
