"""REST API of recruitment links (study admins): make one for a crowd platform, list them with
how many joined and completed, close one; the study's participants by pseudonym.

A link's URL is in the answer that makes it only (its token is stored hashed), with the
platform's placeholders for the ids, ready to paste into the platform."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.api.studies import refused
from annotation.api.workflow_bodies import Error
from annotation.errors import ServiceError
from annotation.models import RecruitmentLink
from annotation.permissions import IsStudyAdmin, study_from_view
from annotation.rules import recruitment
from annotation.services import recruitment as service


class LinkBody(serializers.Serializer):
    platform = serializers.ChoiceField(choices=RecruitmentLink.Platform.values, required=False,
                                       default=recruitment.PROLIFIC, help_text="sets the parameters' default names")
    label = serializers.CharField(max_length=1000, allow_blank=True, required=False, default="",
                                  help_text="what the link is for, for you")
    cap = serializers.IntegerField(help_text=f"most participants the link takes (1 to {recruitment.CAP_MAX})")
    quota = serializers.IntegerField(help_text=f"items each participant is given (1 to {recruitment.QUOTA_MAX})")
    days = serializers.IntegerField(required=False, allow_null=True, default=None,
                                    help_text=f"the link expires after this many days (1 to {service.LINK_DAYS_MAX});"
                                              " null: when it is closed")
    time_allowed = serializers.IntegerField(
        required=False, allow_null=True, default=None,
        help_text=f"minutes each participant has from joining (the platform's maximum time, 1 to "
                  f"{recruitment.TIME_ALLOWED_MAX}); past it, not completed, their items not submitted go to new "
                  "participants and they cannot come back; null: no limit")
    participant_param = serializers.CharField(max_length=100, allow_blank=True, required=False, default="",
                                              help_text="the participant id's URL parameter (Prolific: PROLIFIC_PID;"
                                                        " otherwise pid)")
    study_param = serializers.CharField(max_length=100, allow_blank=True, required=False,
                                        help_text="the platform's study id parameter (Prolific: STUDY_ID; empty: none)")
    session_param = serializers.CharField(max_length=100, allow_blank=True, required=False,
                                          help_text="the platform's session id parameter (Prolific: SESSION_ID; "
                                                    "empty: none)")
    completion_code = serializers.CharField(max_length=1000, allow_blank=True, required=False, default="",
                                            help_text="the code shown when a participant's work is done (the "
                                                      "platform's; empty: one is made)")
    completion_url = serializers.CharField(max_length=1000, allow_blank=True, required=False, default="",
                                           help_text="where a participant whose work is done is sent, e.g. "
                                                     "https://app.prolific.com/submissions/complete?cc=CODE")


class LinkAnswer(serializers.Serializer):
    id = serializers.IntegerField()
    label = serializers.CharField()
    role = serializers.CharField()
    platform = serializers.ChoiceField(choices=RecruitmentLink.Platform.values)
    participant_param = serializers.CharField()
    study_param = serializers.CharField()
    session_param = serializers.CharField()
    cap = serializers.IntegerField()
    quota = serializers.IntegerField()
    expires_at = serializers.DateTimeField(allow_null=True)
    time_allowed = serializers.IntegerField(allow_null=True, help_text="minutes each participant has; null: no limit")
    completion_code = serializers.CharField()
    completion_url = serializers.CharField()
    state = serializers.ChoiceField(choices=["open", "full", "expired", "closed"])
    joined = serializers.IntegerField()
    completed = serializers.IntegerField()
    declines = serializers.IntegerField(help_text="people who declined the study's consent on this link")
    created_by = serializers.CharField()
    created_at = serializers.DateTimeField()
    closed_at = serializers.DateTimeField(allow_null=True)
    url = serializers.CharField(required=False, help_text="the link, the platform's placeholders in place: only "
                                                          "in the answer that creates it")


class ParticipantAnswer(serializers.Serializer):
    pseudonym = serializers.CharField(help_text="derived from the keyed hash of the platform's id")
    username = serializers.CharField()
    link = serializers.IntegerField()
    joined_at = serializers.DateTimeField()
    done = serializers.IntegerField()
    assigned = serializers.IntegerField()
    completed_at = serializers.DateTimeField(allow_null=True)
    state = serializers.ChoiceField(choices=recruitment.PARTICIPANT_STATES,
                                    help_text="timed out: their time allowed passed before they completed")
    state_at = serializers.DateTimeField(allow_null=True, help_text="since when: completed_at, the end of their "
                                         "time allowed, or their withdrawal; null while working")
    time_out_at = serializers.DateTimeField(allow_null=True, help_text="when their time allowed ends; null: never")


def link_row(link: RecruitmentLink, counts: dict[str, int]) -> dict:
    state = link.state
    if state == "open" and counts.get("joined", 0) >= link.cap:
        state = "full"
    return {
        "id": link.pk, "label": link.label, "role": link.role, "platform": link.platform,
        "participant_param": link.participant_param, "study_param": link.study_param,
        "session_param": link.session_param, "cap": link.cap, "quota": link.quota, "expires_at": link.expires_at,
        "time_allowed": link.time_allowed,
        "completion_code": link.completion_code, "completion_url": link.completion_url, "state": state,
        "joined": counts.get("joined", 0), "completed": counts.get("completed", 0),
        "declines": link.declines,
        "created_by": link.created_by.get_username(), "created_at": link.created_at, "closed_at": link.closed_at,
    }


class RecruitmentLinkList(APIView):
    """The study's recruitment links (never their URLs). POST makes one for annotators: its
    `url` is shown once."""

    permission_classes = [IsStudyAdmin]

    @extend_schema(responses=LinkAnswer(many=True))
    def get(self, request, slug):
        links = list(RecruitmentLink.objects.filter(study=study_from_view(self)).select_related("created_by"))
        counts = service.link_counts(links)
        return Response([link_row(link, counts.get(link.pk, {})) for link in links])

    @extend_schema(request=LinkBody, responses={201: LinkAnswer})
    def post(self, request, slug):
        study = study_from_view(self)
        body = LinkBody(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            link, token = service.recruitment_link_create(study=study, actor=request.user, **body.validated_data)
        except ServiceError as exc:
            refused(exc)
        url = recruitment.recruitment_url(
            request.build_absolute_uri(f"/join/{token}/"), platform=link.platform,
            participant=link.participant_param, study=link.study_param, session=link.session_param)
        return Response({**link_row(link, {}), "url": url}, status=status.HTTP_201_CREATED)


class RecruitmentLinkClose(APIView):
    """No one new joins through the link; its participants may finish while the study runs."""

    permission_classes = [IsStudyAdmin]

    @extend_schema(request=None, responses={200: LinkAnswer, 409: Error})
    def post(self, request, slug, link_id):
        link = RecruitmentLink.objects.filter(study=study_from_view(self), pk=link_id).first()
        if link is None:
            raise NotFound("No such recruitment link in this study.")
        try:
            link = service.recruitment_link_close(link=link, actor=request.user)
        except ServiceError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(link_row(link, service.link_counts([link]).get(link.pk, {})))


class ParticipantList(APIView):
    """The study's participants by pseudonym (never their platform ids), with their progress."""

    permission_classes = [IsStudyAdmin]

    @extend_schema(responses=ParticipantAnswer(many=True))
    def get(self, request, slug):
        return Response([row.__dict__ for row in service.participants_list(study=study_from_view(self))])
