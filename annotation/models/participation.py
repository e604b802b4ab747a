"""How people come into a study and what they are given and agree to: recruitment links for
crowd platforms and their participants, the study's guidelines and consent (versioned), and
withdrawals. Thin models, as in `annotation.models`, which imports them all."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.models import Study


class RecruitmentLink(models.Model):
    """An open link for a crowd platform (Prolific, an MTurk-style panel): whoever opens it with
    a participant id becomes (or, coming back, resumes as) an annotator of the study, up to
    `cap` participants, each given `quota` items (annotation.services.recruitment).

    Only the sha256 of the link's token is stored, as for invitations. The role is annotator,
    always: a link cannot be raised to another role."""

    class Platform(models.TextChoices):
        PROLIFIC = "prolific", "Prolific"
        OTHER = "other", "another platform"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="recruitment_links")
    token_hash = models.CharField(max_length=64, unique=True, help_text="sha256 of the link's token")
    role = models.CharField(max_length=20, default="annotator", editable=False)
    label = models.CharField(max_length=200, blank=True, help_text="what it is for, as its maker wrote")
    platform = models.CharField(max_length=20, choices=Platform.choices, default=Platform.PROLIFIC)
    participant_param = models.CharField(max_length=40, help_text="the URL parameter holding the participant id")
    study_param = models.CharField(max_length=40, blank=True, help_text="the platform's study id parameter")
    session_param = models.CharField(max_length=40, blank=True, help_text="the platform's session id parameter")
    cap = models.PositiveIntegerField(help_text="most participants the link takes")
    quota = models.PositiveIntegerField(help_text="items each participant is given")
    expires_at = models.DateTimeField(null=True, blank=True)
    time_allowed = models.PositiveIntegerField(
        null=True, blank=True,
        help_text="minutes each participant has from joining (the platform's maximum time); empty: no limit")
    completion_code = models.CharField(max_length=40, help_text="shown to a participant whose work is done")
    completion_url = models.CharField(max_length=500, blank=True,
                                      help_text="where a participant whose work is done is sent (the platform's)")
    declines = models.PositiveIntegerField(
        default=0, help_text="people who declined the study's consent on this link (a count, nothing else)")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    closed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.CheckConstraint(condition=Q(role="annotator"), name="recruitment_link_annotators_only"),
            models.CheckConstraint(condition=Q(cap__gte=1) & Q(quota__gte=1),
                                   name="recruitment_link_cap_and_quota_positive"),
            models.CheckConstraint(condition=Q(time_allowed__isnull=True) | Q(time_allowed__gte=1),
                                   name="recruitment_link_time_allowed_positive"),
        ]

    def __str__(self) -> str:
        return f"recruitment link #{self.pk} to {self.study.slug}"

    @property
    def state(self) -> str:
        """closed, expired or open (whether it is full is counted by the service)."""
        from django.utils import timezone

        if self.closed_at:
            return "closed"
        if self.expires_at and self.expires_at <= timezone.now():
            return "expired"
        return "open"


class RecruitmentKey(models.Model):
    """The study's own key for the participants' ids (HMAC): the same id gives the same
    participant in the study for as long as the study lives, whatever happens to SECRET_KEY,
    and different pseudonyms in different studies."""

    study = models.OneToOneField(Study, on_delete=models.CASCADE, primary_key=True, related_name="+")
    secret = models.CharField(max_length=64, editable=False)

    def __str__(self) -> str:
        return f"recruitment key of {self.study_id}"


class Participant(models.Model):
    """A person recruited through a link: an account without a password, signed in through the
    link alone. The platform's id is looked up by its keyed hash (pid_hash); people see the
    pseudonym. For paying them, the id is also kept sealed (pid_sealed: AES-GCM under a key
    derived from SECRET_KEY and the study's RecruitmentKey, annotation.rules.sealed_ids), opened
    only for the study admins' payment report; empty for participants who joined before."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="participants")
    link = models.ForeignKey(RecruitmentLink, on_delete=models.PROTECT, related_name="participants")
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="participation")
    pid_hash = models.CharField(max_length=64, help_text="HMAC-SHA256 of the platform's participant id")
    pid_sealed = models.CharField(max_length=200, blank=True, default="",
                                  help_text="the platform's participant id, encrypted (for paying)")
    pseudonym = models.CharField(max_length=20)
    assigned = models.PositiveIntegerField(default=0, help_text="items given when they joined")
    joined_at = models.DateTimeField(auto_now_add=True)
    last_seen_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    # Their link's time allowed, from when they joined: past it, not completed, they have timed
    # out (annotation.services.recruitment): their unsubmitted items are free for others.
    time_out_at = models.DateTimeField(null=True, blank=True, help_text="when their time allowed ends; empty: never")

    class Meta:
        ordering = ["joined_at", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["study", "pid_hash"], name="participant_once_per_study"),
            models.UniqueConstraint(fields=["study", "pseudonym"], name="participant_pseudonym_unique"),
        ]

    def __str__(self) -> str:
        return f"participant {self.pseudonym} of {self.study_id}"
class Withdrawal(models.Model):
    """A member's withdrawal from a study (annotation.services.withdrawal): from ``at`` on they
    do no work there, their waiting items went back to the pool (``released``), and none of
    their annotations counts in the profile, Table 1, scoring or the release
    (annotation.selectors.counted). ``erased_at``: when the content of their annotations was
    erased (``erased`` of them), at their request or by the study's setting. The row names the
    person and counts; it holds no content.

    ``erasing`` is true only inside the erasing transaction: while it is, the database lets the
    erasure change the work rows of a closed study (migration 0033); it is never committed true.
    """

    study = models.ForeignKey(Study, on_delete=models.PROTECT, related_name="withdrawals")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    pseudonym = models.CharField(max_length=150, help_text="the participant's pseudonym, or the member's username")
    at = models.DateTimeField(auto_now_add=True)
    released = models.PositiveIntegerField(default=0, help_text="waiting items given back to the pool")
    erase_requested = models.BooleanField(default=False)
    erased_at = models.DateTimeField(null=True, blank=True)
    erased = models.PositiveIntegerField(default=0, help_text="annotations whose content was erased")
    erasing = models.BooleanField(default=False)

    class Meta:
        # By the row's own columns: ordering by "study" would take Study's ordering (its slug)
        # and join the study table into every query, `.first()` included.
        ordering = ["at", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["study", "user"], name="withdrawal_once_per_person"),
            models.CheckConstraint(
                condition=Q(erased_at__isnull=True) | Q(erase_requested=True), name="withdrawal_erased_if_requested"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.pseudonym} withdrew from {self.study_id}"


class GuidelineVersion(models.Model):
    """One version of a study's guidelines: Markdown written by its admins, and examples of the
    failure modes (annotation.services.guidelines). While the study is in setup, an edit
    replaces its one draft; once it runs, each edit is a new version (numbered 1, 2, ...) and
    verdicts name the version they were given under."""

    study = models.ForeignKey(Study, on_delete=models.PROTECT, related_name="guideline_versions")
    number = models.PositiveIntegerField()
    text = models.TextField(blank=True, help_text="Markdown, stored as written, rendered sanitised")
    # [{mode: a failure mode's key, excerpt, correction, why}], in the order written.
    examples = models.JSONField(default=list, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["study", "number"]
        constraints = [
            models.UniqueConstraint(fields=["study", "number"], name="guideline_version_unique_per_study"),
            models.CheckConstraint(condition=Q(number__gte=1), name="guideline_version_from_1"),
        ]

    def __str__(self) -> str:
        return f"guidelines v{self.number} of {self.study.slug}"


class GuidelineNotice(models.Model):
    """The latest guideline version a person dismissed the notice of, in one study: newer
    versions are announced ("guidelines updated", with the diff) until they dismiss them."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    number = models.PositiveIntegerField(help_text="the guideline version dismissed")
    dismissed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["study", "user"], name="guideline_notice_once_per_person"),
        ]

    def __str__(self) -> str:
        return f"{self.user} read guidelines v{self.number} of {self.study.slug}"


class ConsentVersion(models.Model):
    """One version of the consent text a study asks its crowd participants and members to accept
    before anything else (annotation.services.consent): versioned like the guidelines, a draft
    replaced while the study is in setup, a new version for each edit once it runs. An empty
    text asks for no consent."""

    study = models.ForeignKey(Study, on_delete=models.PROTECT, related_name="consent_versions")
    number = models.PositiveIntegerField()
    text = models.TextField(blank=True, help_text="Markdown, stored as written, rendered sanitised")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["study", "number"]
        constraints = [
            models.UniqueConstraint(fields=["study", "number"], name="consent_version_unique_per_study"),
            models.CheckConstraint(condition=Q(number__gte=1), name="consent_version_from_1"),
        ]

    def __str__(self) -> str:
        return f"consent v{self.number} of {self.study.slug}"


class ConsentRecord(models.Model):
    """A person accepted version `number` of a study's consent text, at `accepted_at`."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    number = models.PositiveIntegerField(help_text="the consent version accepted")
    accepted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "user", "number"]
        constraints = [
            models.UniqueConstraint(fields=["study", "user", "number"], name="consent_once_per_person_and_version"),
        ]

    def __str__(self) -> str:
        return f"{self.user} accepted consent v{self.number} of {self.study_id}"
