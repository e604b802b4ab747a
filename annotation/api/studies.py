"""REST API of setting studies up: create, settings, members, invitations, history.

Who may do what (annotation.permissions): site admins (is_staff) and people holding the
`annotation.add_study` permission create studies and become their study admin; study admins
change settings and manage members and invitations; a site admin reads any study (settings,
members, history) and acts only after adding themselves a role, which is audited.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db.models import Count
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.exceptions import APIException, NotFound, PermissionDenied, ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.api.serializers import FailureModeSerializer, StudySerializer
from annotation.api.workflow_bodies import Error
from annotation.errors import FieldErrors, ServiceError
from annotation.models import AssignmentDesign, AuditEvent, CaptionLanguage, Invitation, Membership, StudyState
from annotation.permissions import (
    MEMBERS_REFUSAL,
    SETTINGS_REFUSAL,
    IsStudyAdmin,
    IsStudyAdminOrSiteReader,
    MayCreateStudies,
    Role,
    is_site_reader,
    readable_study_from_view,
    studies_of,
    study_from_view,
    user_roles,
)
from annotation.rules import study_settings
from annotation.services import invitation_mail, members
from annotation.services.studies import study_create, study_update
from annotation.services.taxonomy import taxonomy_modes

MEANINGS = study_settings.MEANINGS


class Refused(APIException):
    status_code = status.HTTP_400_BAD_REQUEST
    default_detail = "Refused."


def refused(exc: ServiceError):
    """A service's refusal as the API's 400: keyed by field when it names fields."""
    if isinstance(exc, FieldErrors):
        raise ValidationError({field: [message] for field, message in exc.errors.items()})
    raise Refused(str(exc))


class SettingsBody(serializers.Serializer):
    """A study's settings; each is checked again by the service (ranges, order, choices)."""

    # Blank names and slugs reach the service, whose messages say what to give.
    name = serializers.CharField(max_length=1000, allow_blank=True, trim_whitespace=False)
    description = serializers.CharField(max_length=20000, allow_blank=True, required=False, trim_whitespace=False,
                                        help_text=MEANINGS["description"])
    taxonomy = serializers.IntegerField(required=False, help_text="a taxonomy version's id (GET /api/taxonomies/)")
    word_thresholds = serializers.ListField(child=serializers.IntegerField(), required=False, max_length=100,
                                            help_text=MEANINGS["word_thresholds"])
    near_total_cut = serializers.FloatField(required=False, help_text=MEANINGS["near_total_cut"])
    length_band = serializers.FloatField(required=False, help_text=MEANINGS["length_band"])
    assignment_design = serializers.ChoiceField(choices=AssignmentDesign.values, required=False,
                                                help_text=MEANINGS["assignment_design"])
    spread_gap = serializers.IntegerField(required=False, help_text=MEANINGS["spread_gap"])
    overlap_share = serializers.FloatField(required=False, help_text=MEANINGS["overlap_share"])
    undo_seconds = serializers.IntegerField(required=False, allow_null=True, help_text=MEANINGS["undo_seconds"])
    caption_language = serializers.ChoiceField(choices=CaptionLanguage.values, required=False,
                                               help_text=MEANINGS["caption_language"])
    erase_on_withdrawal = serializers.BooleanField(required=False, help_text=MEANINGS["erase_on_withdrawal"])


class StudyCreateBody(SettingsBody):
    slug = serializers.CharField(max_length=1000, allow_blank=True,
                                 help_text="2-60 lowercase letters, digits and single hyphens")


class SettingsChange(SettingsBody):
    name = serializers.CharField(max_length=1000, required=False, allow_blank=True, trim_whitespace=False)


class StudyList(generics.ListAPIView):
    """The studies you are a member of (site admins: every study), archived ones only with
    `?archived=1`; POST creates one, in setup, with you as its study admin."""

    serializer_class = StudySerializer

    @extend_schema(parameters=[OpenApiParameter("archived", bool, description="include archived studies")])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        archived = self.request.query_params.get("archived", "").lower() in {"1", "true", "yes"}
        return studies_of(self.request.user, archived=archived).select_related("taxonomy")

    @extend_schema(request=StudyCreateBody, responses={201: StudySerializer})
    def post(self, request):
        if not MayCreateStudies().has_permission(request, self):
            raise PermissionDenied(MayCreateStudies.message)
        body = StudyCreateBody(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            study = study_create(**body.validated_data, created_by=request.user, state=StudyState.SETUP)
        except ServiceError as exc:
            refused(exc)
        return Response(StudySerializer(study, context={"request": request}).data, status=status.HTTP_201_CREATED)


class SlugAnswer(serializers.Serializer):
    slug = serializers.CharField()
    available = serializers.BooleanField()
    problem = serializers.CharField(allow_null=True)


class SlugCheck(APIView):
    """Whether `slug` can name a new study; with `name` and no slug, the slug suggested for it."""

    permission_classes = [MayCreateStudies]

    @extend_schema(parameters=[OpenApiParameter("slug", str), OpenApiParameter("name", str)], responses=SlugAnswer)
    def get(self, request):
        from annotation.models import Study

        slug = request.query_params.get("slug") or study_settings.slug_suggest(request.query_params.get("name", ""))
        problem = study_settings.slug_problem(slug)
        if problem is None and Study.objects.filter(slug=slug).exists():
            problem = f"A study with slug {slug!r} already exists; choose another."
        return Response({"slug": slug, "available": problem is None, "problem": problem})


class StudyDetail(APIView):
    """A study and its settings: for its members, and site admins (read-only). PATCH changes
    settings (study admins)."""

    @extend_schema(responses=StudySerializer)
    def get(self, request, slug):
        study = readable_study_from_view(self, request.user)
        return Response(StudySerializer(study, context={"request": request}).data)

    @extend_schema(request=SettingsChange, responses=StudySerializer)
    def patch(self, request, slug):
        study = readable_study_from_view(self, request.user)
        if Role.ADMIN not in user_roles(request.user, study):
            raise PermissionDenied(SETTINGS_REFUSAL)
        body = SettingsChange(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            study = study_update(study=study, actor=request.user, changes=dict(body.validated_data))
        except ServiceError as exc:
            refused(exc)
        return Response(StudySerializer(study, context={"request": request}).data)


class TaxonomyVersionAnswer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    version = serializers.IntegerField()
    description = serializers.CharField()
    frozen = serializers.BooleanField()
    content_hash = serializers.CharField()
    studies = serializers.IntegerField(help_text="how many studies use it")
    modes = FailureModeSerializer(many=True)


class TaxonomyList(APIView):
    """Every taxonomy version, with its failure modes' definitions, to pick one for a study."""

    @extend_schema(responses=TaxonomyVersionAnswer(many=True))
    def get(self, request):
        from annotation.models import TaxonomyVersion

        versions = TaxonomyVersion.objects.annotate(study_count=Count("studies"))
        return Response([
            {"id": t.pk, "name": t.name, "version": t.version, "description": t.description,
             "frozen": t.is_frozen, "content_hash": t.content_hash, "studies": t.study_count,
             "modes": [dict(mode) for mode in taxonomy_modes(t)]}
            for t in versions
        ])


# --------------------------------------------------------------------------- members


class MemberAnswer(serializers.Serializer):
    username = serializers.CharField()
    roles = serializers.ListField(child=serializers.ChoiceField(choices=Role.values))
    active = serializers.BooleanField()
    since = serializers.DateTimeField()
    consent_version = serializers.IntegerField(allow_null=True, help_text="the newest version of the study's "
                                               "consent they accepted (null: none)")
    consent_at = serializers.DateTimeField(allow_null=True, help_text="when they accepted it")


class MemberAdd(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    roles = serializers.ListField(child=serializers.CharField(max_length=20), max_length=10)


class RolesChange(serializers.Serializer):
    roles = serializers.ListField(child=serializers.CharField(max_length=20), max_length=10)


class Deactivated(serializers.Serializer):
    username = serializers.CharField()
    claims_released = serializers.IntegerField()
    detail = serializers.CharField()


def member_row(member: members.Member) -> dict:
    version, at = member.consent or (None, None)
    return {"username": member.username, "roles": member.roles, "active": member.active, "since": member.since,
            "consent_version": version, "consent_at": at}


def account(username: str):
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise ValidationError({"username": [f"There is no account {username!r:.160}. Invite them instead."]})
    return user


def member_of(study, username: str):
    user = get_user_model().objects.filter(username=username).first()
    if user is None or not Membership.objects.filter(study=study, user=user).exists():
        raise NotFound(f"{username} is not a member of this study.")
    return user


class MemberList(APIView):
    """The study's members and those deactivated. POST adds an existing account with roles
    (study admins; a site admin may add themselves, audited as site_admin_join)."""

    permission_classes = [IsStudyAdminOrSiteReader]

    @extend_schema(responses=MemberAnswer(many=True))
    def get(self, request, slug):
        return Response([member_row(m) for m in members.members_list(study=study_from_view(self))])

    def check_permissions(self, request):
        if request.method == "POST" and request.user.is_authenticated and request.user.is_staff:
            readable_study_from_view(self, request.user)  # 404 for no such study
            return
        super().check_permissions(request)

    @extend_schema(request=MemberAdd, responses={201: MemberAnswer})
    def post(self, request, slug):
        study = study_from_view(self)
        body = MemberAdd(data=request.data)
        body.is_valid(raise_exception=True)
        user = account(body.validated_data["username"])
        if Role.ADMIN not in user_roles(request.user, study):
            if not (is_site_reader(request.user, study) and user.pk == request.user.pk):
                raise PermissionDenied(MEMBERS_REFUSAL)
        try:
            roles = members.member_add(study=study, actor=request.user, user=user, roles=body.validated_data["roles"])
        except ServiceError as exc:
            refused(exc)
        row = next(m for m in members.members_list(study=study) if m.username == user.get_username())
        return Response({**member_row(row), "roles": roles}, status=status.HTTP_201_CREATED)


class MemberDetail(APIView):
    """PATCH gives the member exactly `roles` (study admins)."""

    permission_classes = [IsStudyAdmin]

    @extend_schema(request=RolesChange, responses=MemberAnswer)
    def patch(self, request, slug, username):
        study = study_from_view(self)
        user = member_of(study, username)
        body = RolesChange(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            members.member_roles_set(study=study, actor=request.user, user=user, roles=body.validated_data["roles"])
        except ServiceError as exc:
            refused(exc)
        row = next(m for m in members.members_list(study=study) if m.username == user.get_username())
        return Response(member_row(row))


class MemberDeactivate(APIView):
    """The member loses every role and their review claims; their work stays theirs."""

    permission_classes = [IsStudyAdmin]

    @extend_schema(request=None, responses=Deactivated)
    def post(self, request, slug, username):
        study = study_from_view(self)
        user = member_of(study, username)
        try:
            released = members.member_deactivate(study=study, actor=request.user, user=user)
        except ServiceError as exc:
            refused(exc)
        claims = f"; {released} review claim(s) went back to the queue" if released else ""
        return Response({"username": username, "claims_released": released,
                         "detail": f"{username} is no longer a member{claims}. Their work is kept."})


# --------------------------------------------------------------------------- invitations


class InvitationBody(serializers.Serializer):
    roles = serializers.ListField(child=serializers.CharField(max_length=20), max_length=10)
    note = serializers.CharField(max_length=1000, allow_blank=True, required=False,
                                 help_text="who it is for (an e-mail address, a name)")
    days = serializers.IntegerField(required=False, default=members.INVITATION_DAYS_DEFAULT,
                                    help_text=f"how long the link works, 1 to {members.INVITATION_DAYS_MAX} days")
    email = serializers.CharField(max_length=1000, allow_blank=True, required=False, default="",
                                  help_text="send the link to this address once the invitation is stored")


class InvitationSendBody(serializers.Serializer):
    email = serializers.CharField(max_length=1000, required=False,
                                  help_text="send to this address instead (it becomes the invitation's)")


class InvitationAnswer(serializers.Serializer):
    id = serializers.IntegerField()
    roles = serializers.ListField(child=serializers.CharField())
    note = serializers.CharField()
    state = serializers.ChoiceField(choices=["open", "accepted", "revoked", "expired"])
    created_by = serializers.CharField()
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    accepted_by = serializers.CharField(allow_null=True)
    email = serializers.CharField(help_text="where the link is sent; empty: it was only shown")
    mail_state = serializers.ChoiceField(choices=["", "sending", "sent", "failed"],
                                         help_text="how the last sending went (empty: never sent)")
    mail_error = serializers.CharField(help_text="the mail server's answer when it failed")
    mail_sent_at = serializers.DateTimeField(allow_null=True)
    mail_attempts = serializers.IntegerField()
    url = serializers.CharField(required=False,
                                help_text="the link: only in the answer that creates (or sends) it")


def invitation_row(invitation: Invitation) -> dict:
    return {
        "id": invitation.pk, "roles": invitation.roles, "note": invitation.note, "state": invitation.state,
        "created_by": invitation.created_by.get_username(), "created_at": invitation.created_at,
        "expires_at": invitation.expires_at,
        "accepted_by": invitation.accepted_by.get_username() if invitation.accepted_by_id else None,
        "email": invitation.email, "mail_state": invitation.mail_state, "mail_error": invitation.mail_error,
        "mail_sent_at": invitation.mail_sent_at, "mail_attempts": invitation.mail_attempts,
    }


def site_root(request) -> str:
    """This site's address as the browser reached it, for links sent by e-mail."""
    return request.build_absolute_uri("/")


class InvitationList(APIView):
    """The study's invitations (never their links). POST makes one: its `url` is shown once."""

    permission_classes = [IsStudyAdmin]

    @extend_schema(responses=InvitationAnswer(many=True))
    def get(self, request, slug):
        rows = Invitation.objects.filter(study=study_from_view(self)).select_related("created_by", "accepted_by")
        return Response([invitation_row(i) for i in rows])

    @extend_schema(request=InvitationBody, responses={201: InvitationAnswer})
    def post(self, request, slug):
        study = study_from_view(self)
        body = InvitationBody(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            invitation, token = invitation_mail.invitation_create_and_send(
                study=study, actor=request.user, base_url=site_root(request), **body.validated_data)
        except ServiceError as exc:
            refused(exc)
        invitation.refresh_from_db()  # sent (or failed) once its transaction committed
        url = invitation_mail.invitation_link(site_root(request), token)
        return Response({**invitation_row(invitation), "url": url}, status=status.HTTP_201_CREATED)


class InvitationSend(APIView):
    """Send an open invitation's link by e-mail again (or to a corrected `email`): a new link is
    made and sent; the earlier one stops working. A mail server's refusal is in `mail_error`."""

    permission_classes = [IsStudyAdmin]

    @extend_schema(request=InvitationSendBody, responses={200: InvitationAnswer, 409: Error})
    def post(self, request, slug, invitation_id):
        invitation = Invitation.objects.filter(study=study_from_view(self), pk=invitation_id).first()
        if invitation is None:
            raise NotFound("No such invitation in this study.")
        body = InvitationSendBody(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            invitation, token = invitation_mail.invitation_send(
                invitation=invitation, actor=request.user, base_url=site_root(request),
                email=body.validated_data.get("email"))
        except FieldErrors as exc:
            refused(exc)
        except ServiceError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        invitation.refresh_from_db()  # sent (or failed) once its transaction committed
        url = invitation_mail.invitation_link(site_root(request), token)
        return Response({**invitation_row(invitation), "url": url})


class InvitationRevoke(APIView):
    permission_classes = [IsStudyAdmin]

    @extend_schema(request=None, responses={200: InvitationAnswer, 409: Error})
    def post(self, request, slug, invitation_id):
        invitation = Invitation.objects.filter(study=study_from_view(self), pk=invitation_id).first()
        if invitation is None:
            raise NotFound("No such invitation in this study.")
        try:
            invitation = members.invitation_revoke(invitation=invitation, actor=request.user)
        except ServiceError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(invitation_row(invitation))


# --------------------------------------------------------------------------- history

HISTORY_ACTIONS = (
    "study_create", "study_update", "member_add", "site_admin_join", "member_roles", "member_deactivate",
    "invitation_create", "invitation_revoke", "invitation_accept", "invitation_send", "guidelines_update",
    "consent_update", "recruitment_link_create", "recruitment_link_close",
    # Gold settings and qualification decisions (annotation.services.gold).
    "practice_configure", "practice_retry_allow",
    # Withdrawals and erasures (annotation.services.withdrawal): who and how many, no content.
    "participant_withdraw", "participant_erase",
    # Admins reading the participants' platform ids (annotation.services.payments): what and how
    # many, never an id.
    "payments_read",
    # Profile exports deleted by a person, or by retention (scoring.profile_jobs).
    "profile_export_delete", "profile_export_prune",
)


class HistoryEntry(serializers.Serializer):
    at = serializers.DateTimeField()
    actor = serializers.CharField(allow_null=True)
    action = serializers.CharField()
    before = serializers.JSONField()
    after = serializers.JSONField()


def history_of(study):
    """The study's settings, membership and invitation events, newest first."""
    return (AuditEvent.objects.filter(study=study, annotation__isnull=True, action__in=HISTORY_ACTIONS)
            .select_related("actor").order_by("-at", "-pk"))


class StudyHistory(APIView):
    """Who changed the study's settings, members and invitations, and how (newest first)."""

    permission_classes = [IsStudyAdminOrSiteReader]

    @extend_schema(responses=HistoryEntry(many=True))
    def get(self, request, slug):
        return Response([
            {"at": e.at, "actor": e.actor.get_username() if e.actor_id else None, "action": e.action,
             "before": e.before, "after": e.after}
            for e in history_of(study_from_view(self))
        ])
