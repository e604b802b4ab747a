"""Redline's data: studies, the frozen taxonomy, clips, candidate models, captions, references,
annotations and their audit trail, jobs; and, in `annotation.models.participation`, how people
come in and what they are given and agree to (recruitment links, participants, guidelines,
consent, withdrawals), imported here so that every table is `annotation.models.<Name>`.

Models stay thin: fields, constraints and tiny properties. Every write goes
through `annotation.services`. Constraints that span rows (windows end within
the clip, in order, without overlap) are database triggers created in
migration 0002 (on PostgreSQL checked once per statement since migration 0011), so that no
code path can store an impossible timeline.
"""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models
from django.db.models import F, Q

DEFAULT_WORD_THRESHOLDS = [1, 3, 6, 16]
DEFAULT_NEAR_TOTAL_CUT = 0.55
DEFAULT_LENGTH_BAND = 0.05
# The practice set's pass rule by default (docs/gold.md says why these numbers).
DEFAULT_PRACTICE_MIN_ITEMS = 5
DEFAULT_PRACTICE_MIN_OVERVIEW_AGREEMENT = 0.8
DEFAULT_PRACTICE_MIN_MODE_F1 = 0.5
DEFAULT_PRACTICE_MIN_WINDOW_AGREEMENT = 0.7
DEFAULT_GOLD_DRIFT_THRESHOLD = 0.7


def default_word_thresholds() -> list[int]:
    return list(DEFAULT_WORD_THRESHOLDS)


class TaxonomyVersion(models.Model):
    """One immutable-once-used version of the failure taxonomy."""

    name = models.CharField(max_length=100)
    version = models.PositiveIntegerField()
    description = models.TextField(blank=True)
    # Ordering rules between modes, e.g. [{"prefer": "camera", "over": "factual", "rule": "..."}].
    precedence_rules = models.JSONField(default=list, blank=True)
    content_hash = models.CharField(max_length=64, blank=True, help_text="sha256 of the modes and rules")
    frozen_at = models.DateTimeField(null=True, blank=True, help_text="set when first used")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="taxonomy_name_version_unique"),
        ]
        ordering = ["name", "version"]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"

    @property
    def is_frozen(self) -> bool:
        return self.frozen_at is not None


class FailureMode(models.Model):
    class Level(models.TextChoices):
        UNIT = "unit", "overview and window"
        CAPTION = "caption", "caption only"

    taxonomy = models.ForeignKey(TaxonomyVersion, on_delete=models.PROTECT, related_name="modes")
    key = models.SlugField(max_length=40)
    name = models.CharField(max_length=100)
    definition = models.TextField()
    decision_test = models.CharField(max_length=300)
    level = models.CharField(max_length=10, choices=Level.choices, default=Level.UNIT)
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["taxonomy", "key"], name="mode_key_unique_per_taxonomy"),
        ]
        ordering = ["taxonomy", "position"]

    def __str__(self) -> str:
        return f"{self.name} ({self.key})"


class AssignmentDesign(models.TextChoices):
    ONE_MODEL_PER_CLIP = "one_model_per_clip", "one model per clip"
    SPREAD = "spread", "spread (models of a clip kept apart)"
    CLIP_BLOCKS = "clip_blocks", "clip blocks (pilots only: anchors)"


DEFAULT_SPREAD_GAP = 5


def new_assignment_seed() -> int:
    return secrets.randbelow(2**31)


def new_release_secret() -> str:
    return secrets.token_hex(32)


class StudyState(models.TextChoices):
    """A study's lifecycle: setup -> running -> closed -> archived (annotation.services.lifecycle)."""

    SETUP = "setup", "setting up"
    RUNNING = "running", "running"
    CLOSED = "closed", "closed"
    ARCHIVED = "archived", "archived"


class CaptionLanguage(models.TextChoices):
    """The language captions are written in: it decides what a word is for edit size."""

    ENGLISH = "en", "English"
    CHINESE = "zh", "Chinese"
    JAPANESE = "ja", "Japanese"
    OTHER = "other", "another language written with spaces"


class Study(models.Model):
    slug = models.SlugField(max_length=60, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    taxonomy = models.ForeignKey(TaxonomyVersion, on_delete=models.PROTECT, related_name="studies")
    word_thresholds = models.JSONField(default=default_word_thresholds)
    near_total_cut = models.FloatField(default=DEFAULT_NEAR_TOTAL_CUT)
    length_band = models.FloatField(default=DEFAULT_LENGTH_BAND)
    # How captions reach annotators (annotation.rules.assignment): chosen when assigning, kept here.
    assignment_design = models.CharField(
        max_length=30, choices=AssignmentDesign.choices, default=AssignmentDesign.ONE_MODEL_PER_CLIP
    )
    spread_gap = models.PositiveSmallIntegerField(
        default=DEFAULT_SPREAD_GAP, help_text="spread design: items at least between two captions of a clip"
    )
    assignment_seed = models.BigIntegerField(default=new_assignment_seed, help_text="draws the random order")
    # Studies made before the lifecycle existed were already at work: they default to running.
    state = models.CharField(max_length=10, choices=StudyState.choices, default=StudyState.RUNNING)
    caption_language = models.CharField(
        max_length=10, choices=CaptionLanguage.choices, default=CaptionLanguage.ENGLISH,
        help_text="what a word is for edit size",
    )
    undo_seconds = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="how long a decision may be undone; empty: the site's UNDO_SECONDS"
    )
    # The share of captions that also go to a second annotator, offered when assigning.
    overlap_share = models.FloatField(default=0, help_text="share of captions double-annotated (0-1)")
    # Gold, practice and qualification (annotation.gold; docs/gold.md). The pass rule of the
    # practice set: at least `practice_min_items` practice items done, and the annotator's
    # verdicts agree with the gold ones at least as often as each minimum (shares 0-1; F1 0-1).
    requires_qualification = models.BooleanField(
        default=False, help_text="only annotators who passed the practice set receive real work"
    )
    practice_min_items = models.PositiveSmallIntegerField(default=DEFAULT_PRACTICE_MIN_ITEMS)
    practice_min_overview_agreement = models.FloatField(default=DEFAULT_PRACTICE_MIN_OVERVIEW_AGREEMENT)
    practice_min_mode_f1 = models.FloatField(default=DEFAULT_PRACTICE_MIN_MODE_F1)
    practice_min_window_agreement = models.FloatField(default=DEFAULT_PRACTICE_MIN_WINDOW_AGREEMENT)
    # The share of an annotator's queue that are hidden gold checks (0.05: one in twenty); 0: none.
    gold_rate = models.FloatField(default=0, help_text="share of queue items that are hidden gold checks (0-0.5)")
    # The dashboard warns when an annotator's recent gold agreement falls below this (drift).
    gold_drift_threshold = models.FloatField(default=DEFAULT_GOLD_DRIFT_THRESHOLD)
    # Withdrawal (annotation.services.withdrawal): whether a withdrawing member's annotations are
    # erased at once, whatever they ask; off: erased only when they ask.
    erase_on_withdrawal = models.BooleanField(
        default=False, help_text="erase a withdrawing member's annotations at once"
    )
    # Keys the pseudonyms of annotators and reviewers in a data release (annotation.release);
    # never released, never in bundles or the API.
    release_secret = models.CharField(max_length=64, default=new_release_secret, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "studies"
        ordering = ["slug"]
        constraints = [
            models.CheckConstraint(
                condition=Q(near_total_cut__gt=0) & Q(near_total_cut__lt=1),
                name="study_near_total_cut_between_0_and_1",
            ),
            models.CheckConstraint(
                condition=Q(length_band__gte=0) & Q(length_band__lt=1),
                name="study_length_band_between_0_and_1",
            ),
            models.CheckConstraint(
                condition=Q(overlap_share__gte=0) & Q(overlap_share__lte=1),
                name="study_overlap_share_between_0_and_1",
            ),
            models.CheckConstraint(
                condition=Q(gold_rate__gte=0) & Q(gold_rate__lte=0.5), name="study_gold_rate_between_0_and_half"
            ),
            models.CheckConstraint(
                condition=Q(practice_min_overview_agreement__gte=0) & Q(practice_min_overview_agreement__lte=1)
                & Q(practice_min_mode_f1__gte=0) & Q(practice_min_mode_f1__lte=1)
                & Q(practice_min_window_agreement__gte=0) & Q(practice_min_window_agreement__lte=1)
                & Q(gold_drift_threshold__gte=0) & Q(gold_drift_threshold__lte=1),
                name="study_practice_rule_shares_between_0_and_1",
            ),
            # The same bound as the setup page and the API (study_settings.UNDO_SECONDS_MAX).
            models.CheckConstraint(
                condition=Q(undo_seconds__isnull=True) | Q(undo_seconds__lte=3600),
                name="study_undo_seconds_at_most_an_hour",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    """A person's role in one study; a person may hold several roles."""

    class Role(models.TextChoices):
        ADMIN = "admin", "study admin"
        ANNOTATOR = "annotator", "annotator"
        REVIEWER = "reviewer", "QC reviewer"
        RESEARCHER = "researcher", "researcher"
        # Makes gold verdicts (annotation.gold), named by a study admin; works blind.
        EXPERT = "expert", "gold expert"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=Role.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["study", "user", "role"], name="membership_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.user} - {self.get_role_display()} in {self.study.slug}"


class Invitation(models.Model):
    """A one-time link that makes its holder a member of a study with the invited roles.

    Only the sha256 of the token is stored: the link is shown once, to whoever made it. It is
    used at most once (accepted_at), and not after revoked_at or expires_at
    (annotation.services.members).
    """

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="invitations")
    token_hash = models.CharField(max_length=64, unique=True, help_text="sha256 of the link's token")
    roles = models.JSONField(help_text="the roles accepting grants, exactly")
    note = models.CharField(max_length=200, blank=True, help_text="who it is for, as its maker wrote")
    email = models.EmailField(blank=True, help_text="where the link was sent (empty: the link was only shown)")

    class Mail(models.TextChoices):
        NONE = "", "not sent"
        SENDING = "sending", "sending"
        SENT = "sent", "sent"
        FAILED = "failed", "failed"

    mail_state = models.CharField(max_length=10, choices=Mail.choices, blank=True, default=Mail.NONE)
    mail_error = models.TextField(blank=True, help_text="the mail server's answer when the last sending failed")
    mail_sent_at = models.DateTimeField(null=True, blank=True, help_text="when the last sending was accepted")
    mail_attempts = models.PositiveIntegerField(default=0, help_text="how often a link was sent")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(accepted_at__isnull=True) | Q(accepted_by__isnull=False),
                name="invitation_accepted_by_someone",
            ),
            models.CheckConstraint(
                condition=Q(accepted_at__isnull=True) | Q(revoked_at__isnull=True),
                name="invitation_not_both_accepted_and_revoked",
            ),
            models.CheckConstraint(
                condition=Q(mail_state="") | ~Q(email=""), name="invitation_mail_has_an_address",
            ),
        ]

    def __str__(self) -> str:
        return f"invitation #{self.pk} to {self.study.slug} ({', '.join(self.roles)})"

    @property
    def state(self) -> str:
        from django.utils import timezone

        if self.accepted_at:
            return "accepted"
        if self.revoked_at:
            return "revoked"
        if self.expires_at <= timezone.now():
            return "expired"
        return "open"


class Clip(models.Model):
    class ContentType(models.TextChoices):
        DOMESTIC_LIFESTYLE = "domestic_lifestyle"
        URBAN_VEHICLE = "urban_vehicle"
        NATURE_OUTDOOR = "nature_outdoor"
        PRODUCT_OBJECT = "product_object"
        PEOPLE_ACTIVITY = "people_activity"
        OTHER = "other"
        UNCLEAR = "unclear"

    class CameraPlatform(models.TextChoices):
        HANDHELD = "handheld"
        TRIPOD_STATIC = "tripod_static"
        VEHICLE_MOUNTED = "vehicle_mounted"
        DRONE_AERIAL = "drone_aerial"
        GIMBAL_SMOOTH = "gimbal_smooth"
        OTHER = "other"
        UNCLEAR = "unclear"

    class Level(models.TextChoices):
        LOW = "low"
        MEDIUM = "medium"
        HIGH = "high"
        UNCLEAR = "unclear"

    class ShotScale(models.TextChoices):
        EXTREME_WIDE = "extreme_wide"
        WIDE = "wide"
        MEDIUM = "medium"
        CLOSE = "close"
        EXTREME_CLOSE = "extreme_close"
        UNCLEAR = "unclear"

    study = models.ForeignKey(Study, on_delete=models.PROTECT, related_name="clips")
    name = models.CharField(max_length=200, help_text="the file name without extension")
    # Blank only for a study imported from a bundle without its media (docs/bundle-format.md).
    original = models.FileField(upload_to="clips/original/", blank=True, max_length=400)
    original_filename = models.CharField(max_length=400)
    size_bytes = models.BigIntegerField()
    sha256 = models.CharField(max_length=64)
    duration = models.FloatField(help_text="seconds")
    fps = models.FloatField()
    width = models.PositiveIntegerField()
    height = models.PositiveIntegerField()
    codec = models.CharField(max_length=40)
    pix_fmt = models.CharField(max_length=40, blank=True)
    container = models.CharField(max_length=80, blank=True)
    # Browser-playable H.264 copy, made only when the original is not playable.
    proxy = models.FileField(upload_to="clips/proxy/", blank=True, max_length=400)
    poster = models.FileField(upload_to="clips/poster/", blank=True, max_length=400)
    media_error = models.TextField(blank=True, help_text="why the proxy or poster could not be made")
    shot_changes = models.JSONField(
        null=True,
        blank=True,
        help_text="seconds where a new shot starts (ffmpeg's scene-change score); null until detected",
    )
    content_type = models.CharField(max_length=30, choices=ContentType.choices, blank=True)
    camera_platform = models.CharField(max_length=30, choices=CameraPlatform.choices, blank=True)
    scene_complexity = models.CharField(max_length=10, choices=Level.choices, blank=True)
    shot_scale = models.CharField(max_length=20, choices=ShotScale.choices, blank=True)
    motion_intensity = models.CharField(max_length=10, choices=Level.choices, blank=True)
    manipulated = models.BooleanField(default=False, help_text="a manipulated control clip")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "name"]
        constraints = [
            models.UniqueConstraint(fields=["study", "name"], name="clip_name_unique_per_study"),
            models.UniqueConstraint(fields=["study", "sha256"], name="clip_file_unique_per_study"),
            models.CheckConstraint(condition=Q(duration__gt=0), name="clip_duration_positive"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def playable(self):
        """The file a browser should play: the proxy when one was made."""
        return self.proxy if self.proxy else self.original


class CandidateModel(models.Model):
    """A video-language model whose captions are corrected. Shown to annotators only by alias."""

    study = models.ForeignKey(Study, on_delete=models.PROTECT, related_name="candidate_models")
    name = models.CharField(max_length=200)
    identifier = models.CharField(max_length=300, blank=True)
    route = models.CharField(max_length=200, blank=True)
    providers = models.JSONField(default=list, blank=True)
    alias = models.CharField(max_length=40, help_text="neutral name shown in blind review")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "alias"]
        constraints = [
            models.UniqueConstraint(fields=["study", "name"], name="model_name_unique_per_study"),
            models.UniqueConstraint(fields=["study", "alias"], name="model_alias_unique_per_study"),
        ]

    def __str__(self) -> str:
        return self.name


class Caption(models.Model):
    clip = models.ForeignKey(Clip, on_delete=models.PROTECT, related_name="captions")
    model = models.ForeignKey(CandidateModel, on_delete=models.PROTECT, related_name="captions")
    overview = models.TextField(blank=True)
    input_tokens_per_second = models.FloatField(null=True, blank=True)
    retried = models.BooleanField(default=False)
    re_encoded = models.BooleanField(default=False)
    invalid_kept = models.BooleanField(default=False)
    validation_errors = models.JSONField(default=list, blank=True)
    meta = models.JSONField(default=dict, blank=True, help_text="other generation metadata")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["clip", "model"]
        constraints = [
            models.UniqueConstraint(fields=["clip", "model"], name="caption_unique_per_clip_model"),
            models.CheckConstraint(
                condition=Q(invalid_kept=True) | Q(validation_errors=[]),
                name="caption_errors_only_when_invalid_kept",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.clip} / {self.model}"


class Window(models.Model):
    caption = models.ForeignKey(Caption, on_delete=models.CASCADE, related_name="windows")
    index = models.PositiveIntegerField()
    start = models.FloatField()
    end = models.FloatField()
    scene = models.TextField(blank=True)
    shot = models.TextField(blank=True)

    class Meta:
        ordering = ["caption", "index"]
        constraints = [
            models.UniqueConstraint(fields=["caption", "index"], name="window_index_unique"),
            models.CheckConstraint(condition=Q(start__gte=0), name="window_start_not_negative"),
            models.CheckConstraint(condition=Q(start__lt=F("end")), name="window_start_before_end"),
        ]

    def __str__(self) -> str:
        return f"{self.caption} #{self.index} [{self.start:g}-{self.end:g}]"


class Reference(models.Model):
    """An expert description of a clip, used by reference metrics."""

    clip = models.ForeignKey(Clip, on_delete=models.PROTECT, related_name="references")
    source = models.CharField(max_length=100)
    language = models.CharField(max_length=20, default="en")
    text = models.TextField()
    text_sha256 = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["clip", "source", "language"]
        constraints = [
            models.UniqueConstraint(
                fields=["clip", "source", "language", "text_sha256"], name="reference_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.clip} ({self.source}, {self.language})"


class Annotation(models.Model):
    """One annotator's work on one caption, from assignment to the approved final verdict.

    The workflow is a state machine (annotation.rules.workflow); services move it with
    conditional updates on `version`, so two concurrent actions cannot both succeed,
    and the check constraints below refuse states that make no sense.

    **Purpose** (how to read a row; see GoldItem and annotation.gold):

    - ``work``: the study's real work on a caption. Only these, on captions that are not gold
      items, make the profile, Table 1 and the release's main tables.
    - ``gold``: an expert's gold verdict on a gold item (one per GoldItem, ``GoldItem.gold``);
      its final pass (the annotator pass: a gold verdict is not reviewed) is the gold correction.
      It is final once submitted.
    - ``practice``: a trainee's attempt at a practice item (a gold item in the practice set);
      ``attempt`` counts the practice attempts (1, 2, ...): each attempt has its own rows. Not
      reviewed: the annotator gets feedback against the gold verdict instead.
    - ``gold_check``: an annotator's verdict on a hidden gold item put into their real queue at
      the study's gold rate; the same flow as work (reviewed too), compared with the gold verdict,
      never counted in the profile.

    ``attempt`` is 1 for every purpose but practice.
    """

    class Purpose(models.TextChoices):
        WORK = "work"
        GOLD = "gold"
        PRACTICE = "practice"
        GOLD_CHECK = "gold_check", "gold check"

    # Real work, as the queue, review and qualification gate see it: the study's work and the
    # hidden gold checks that look like it (not gold verdicts, not practice).
    REAL_WORK = (Purpose.WORK, Purpose.GOLD_CHECK)

    # Not stored: an autosave leaves here the snapshot of the annotator pass it just wrote, so
    # its answer need not read the pass back (services.workflow.annotation_save).
    annotator_pass_snapshot: dict | None = None

    class State(models.TextChoices):
        ASSIGNED = "assigned"
        IN_PROGRESS = "in_progress", "in progress"
        SUBMITTED = "submitted"
        IN_REVIEW = "in_review", "in review"
        APPROVED = "approved"
        RETURNED = "returned"

    caption = models.ForeignKey(Caption, on_delete=models.PROTECT, related_name="annotations")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="annotations"
    )
    taxonomy = models.ForeignKey(TaxonomyVersion, on_delete=models.PROTECT, related_name="annotations")
    state = models.CharField(max_length=20, choices=State.choices, default=State.ASSIGNED)
    purpose = models.CharField(max_length=12, choices=Purpose.choices, default=Purpose.WORK)
    attempt = models.PositiveSmallIntegerField(default=1, help_text="a practice item's attempt; else 1")
    # Every save bumps the version; a save based on an older version is a conflict.
    version = models.PositiveIntegerField(default=1)
    overview_locked_at = models.DateTimeField(null=True, blank=True)
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="reviews",
    )
    claim_expires_at = models.DateTimeField(null=True, blank=True)
    return_comment = models.TextField(blank=True)
    # The units of the latest return: [{unit, comment, before, reply}] (see annotation.rules.returns).
    returned_units = models.JSONField(default=list, blank=True)
    active_seconds = models.FloatField(default=0)
    last_saved_at = models.DateTimeField(
        null=True, blank=True, help_text="when the annotator's last autosave was stored"
    )
    # Up to when the annotator's active time is counted: set to the moment they open the item
    # (each visit of the workspace), moved on by each save's credit. A save credits at most the
    # wall time since then plus a few seconds, so a burst of saves cannot add more.
    active_until = models.DateTimeField(null=True, blank=True)
    # Watch telemetry: share of the clip played, seeks, playback speeds.
    telemetry = models.JSONField(default=dict, blank=True)
    # Where the annotator was (pass, window), so a reload restores the page exactly.
    ui_state = models.JSONField(default=dict, blank=True)
    assigned_at = models.DateTimeField(auto_now_add=True)
    # Where the caption sits in the annotator's queue (1 = first), and its exposure: 1 when it
    # is the first caption of its clip this annotator sees, 2 the second... Empty for
    # annotations assigned before designs existed.
    queue_position = models.PositiveIntegerField(null=True, blank=True)
    exposure = models.PositiveSmallIntegerField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    reviewed_at = models.DateTimeField(null=True, blank=True)
    # How much a QC reviewer should look at this first (annotation.selectors.queues.review_risk), set
    # when it is submitted, so the review queue is read in index order, never recomputed.
    risk = models.FloatField(default=0)
    risk_reasons = models.JSONField(default=list, blank=True)
    # The last decisive action (lock_overview, submit, approve) may be undone by whoever took
    # it until `undo_until`; `undo` holds {action, actor, before: fields to restore}. Until
    # then others do not see it (annotation.services.undo; the state trigger allows the
    # undo transitions only while the window is open).
    undo_until = models.DateTimeField(null=True, blank=True)
    undo = models.JSONField(default=dict, blank=True)
    # The study's guidelines when the QC reviewer approved or amended (the annotator's are on
    # their pass, CorrectionPass.guideline_version).
    review_guideline_version = models.ForeignKey(
        "GuidelineVersion", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["assigned_at", "pk"]
        constraints = [
            # Once per caption and annotator, but for the practice attempts (each its own row).
            models.UniqueConstraint(
                fields=["caption", "annotator", "attempt"], name="annotation_once_per_annotator_attempt"
            ),
            models.CheckConstraint(
                condition=Q(purpose__in=["work", "gold", "practice", "gold_check"]),
                name="annotation_purpose_known",
            ),
            models.CheckConstraint(
                condition=Q(attempt=1) | Q(purpose="practice", attempt__gte=1),
                name="annotation_attempts_only_for_practice",
            ),
            models.CheckConstraint(
                condition=Q(state__in=["assigned", "in_progress", "submitted", "in_review", "approved", "returned"]),
                name="annotation_state_known",
            ),
            models.CheckConstraint(
                condition=~Q(state__in=["submitted", "in_review", "approved"])
                | (Q(submitted_at__isnull=False) & Q(overview_locked_at__isnull=False)),
                name="annotation_submitted_has_locked_overview",
            ),
            models.CheckConstraint(
                condition=~Q(state="in_review") | (Q(reviewer__isnull=False) & Q(claim_expires_at__isnull=False)),
                name="annotation_in_review_is_claimed",
            ),
            models.CheckConstraint(
                condition=~Q(state="approved") | (Q(reviewer__isnull=False) & Q(reviewed_at__isnull=False)),
                name="annotation_approved_has_reviewer",
            ),
            models.CheckConstraint(
                condition=~Q(reviewer=F("annotator")), name="annotation_not_reviewed_by_its_annotator"
            ),
            models.CheckConstraint(
                condition=~Q(state="returned") | ~Q(return_comment=""),
                name="annotation_returned_has_comment",
            ),
        ]
        # One index per queue ordering, so a page of a queue is a short index scan:
        # the annotator's queue, and the review queue riskiest first or oldest first. The review
        # indexes hold only what the review queue shows (submitted and in review), in its order,
        # so its first page reads its first rows whatever the number waiting.
        indexes = [
            models.Index(
                fields=["annotator", "state", "assigned_at", "id"], name="annotation_my_queue"
            ),
            models.Index(
                fields=["-risk", "submitted_at", "id"], name="annotation_review_risk",
                condition=models.Q(state__in=["submitted", "in_review"]),
            ),
            models.Index(
                fields=["submitted_at", "id"], name="annotation_review_oldest",
                condition=models.Q(state__in=["submitted", "in_review"]),
            ),
            # Review next also takes over claims that expired: the few items in review, by expiry.
            models.Index(
                fields=["claim_expires_at"], name="annotation_claims_expiring",
                condition=models.Q(state="in_review"),
            ),
            # Start next first looks for the person's open practice item: the few practice items,
            # in their order (otherwise it read all of the person's items to find none).
            models.Index(
                fields=["annotator", "attempt", "assigned_at", "id"], name="annotation_practice_queue",
                condition=models.Q(purpose="practice"),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.caption} by {self.annotator} ({self.state})"


class GoldItem(models.Model):
    """A caption that an expert's gold verdict makes a gold item (annotation.gold).

    ``gold`` is that verdict (an Annotation with purpose ``gold``, made by ``made_by``); its final
    pass is the gold correction that practice attempts and gold checks are compared with. A gold
    item never enters the profile, Table 1 or the release's main tables, whatever annotations
    it has. ``in_practice_set`` puts it in the practice set that new annotators start with; the
    others are the pool of hidden gold checks. Whoever made the gold verdict never gets the
    item to annotate or review.
    """

    study = models.ForeignKey(Study, on_delete=models.PROTECT, related_name="gold_items")
    caption = models.OneToOneField(Caption, on_delete=models.PROTECT, related_name="gold_item")
    gold = models.OneToOneField(Annotation, on_delete=models.PROTECT, related_name="gold_item")
    made_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    in_practice_set = models.BooleanField(default=False)
    # Where it came from: made in the workspace, or imported from a file in the bundle's format.
    source = models.CharField(max_length=20, default="workspace")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "created_at", "pk"]
        indexes = [models.Index(fields=["study", "in_practice_set"], name="golditem_study_practice")]

    def __str__(self) -> str:
        return f"gold item {self.caption} in {self.study.slug}"

    @property
    def ready(self) -> bool:
        """Whether its gold verdict is final (submitted): only then does it count as gold."""
        return self.gold.state == Annotation.State.SUBMITTED


class Qualification(models.Model):
    """An annotator's qualification in a study: their practice attempts and where they stand.

    ``state``: ``not_started`` (no practice yet), ``practising`` (an attempt open), ``passed``,
    ``failed`` (the last attempt failed: no further attempt until a study admin allows one,
    raising ``attempts_allowed``). ``result`` is the last finished attempt's evaluation
    (annotation.rules.gold.practice_evaluate: the figures, the rule and the reasons).
    """

    class State(models.TextChoices):
        NOT_STARTED = "not_started", "not started"
        PRACTISING = "practising"
        PASSED = "passed"
        FAILED = "failed"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="qualifications")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="qualifications")
    state = models.CharField(max_length=12, choices=State.choices, default=State.NOT_STARTED)
    attempts = models.PositiveSmallIntegerField(default=0, help_text="practice attempts started")
    attempts_allowed = models.PositiveSmallIntegerField(default=1)
    result = models.JSONField(default=dict, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["study", "user"]
        constraints = [
            models.UniqueConstraint(fields=["study", "user"], name="qualification_once_per_person"),
            models.CheckConstraint(
                condition=Q(state__in=["not_started", "practising", "passed", "failed"]),
                name="qualification_state_known",
            ),
            models.CheckConstraint(
                condition=Q(attempts__lte=F("attempts_allowed")), name="qualification_attempts_within_allowed"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.study.slug}: {self.state}"


class CorrectionPass(models.Model):
    """The annotator's pass, or the QC reviewer's amendments kept beside it (never over it)."""

    class Kind(models.TextChoices):
        ANNOTATOR = "annotator"
        QC = "qc", "QC"

    class Verdict(models.TextChoices):
        UNDECIDED = "", "undecided"
        ACCEPT = "accept"
        REJECT = "reject"

    annotation = models.ForeignKey(Annotation, on_delete=models.PROTECT, related_name="passes")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    overview_verdict = models.CharField(max_length=10, choices=Verdict.choices, blank=True)
    overview_text = models.TextField(blank=True, help_text="the corrected overview")
    overview_modes = models.JSONField(default=list, blank=True)
    segmentation_verdict = models.CharField(max_length=10, choices=Verdict.choices, blank=True)
    segmentation_modes = models.JSONField(default=list, blank=True)
    # The corrected window list ([{start, end, scene, shot}]) of a rejected segmentation.
    corrected_windows = models.JSONField(default=list, blank=True)
    # The study's guidelines when this pass's verdicts were given: set when the annotator submits
    # (again, after a return) and when a QC reviewer amends. Empty: given before guidelines
    # existed, or not submitted yet.
    guideline_version = models.ForeignKey(
        "GuidelineVersion", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["annotation", "kind"], name="one_pass_of_each_kind"),
            models.CheckConstraint(
                condition=~Q(overview_verdict="accept") | Q(overview_modes=[]),
                name="accepted_overview_has_no_modes",
            ),
            models.CheckConstraint(
                condition=~Q(segmentation_verdict="accept") | Q(segmentation_modes=[]),
                name="accepted_segmentation_has_no_modes",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} pass of {self.annotation}"


class WindowCorrection(models.Model):
    correction_pass = models.ForeignKey(CorrectionPass, on_delete=models.CASCADE, related_name="windows")
    window = models.ForeignKey(Window, on_delete=models.PROTECT, related_name="+")
    verdict = models.CharField(max_length=10, choices=CorrectionPass.Verdict.choices, blank=True)
    scene = models.TextField(blank=True)
    shot = models.TextField(blank=True)
    start = models.FloatField()
    end = models.FloatField()
    modes = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["correction_pass", "window__index"]
        constraints = [
            models.UniqueConstraint(fields=["correction_pass", "window"], name="one_correction_per_window"),
            models.CheckConstraint(condition=Q(start__gte=0) & Q(start__lt=F("end")), name="corrected_window_times"),
            models.CheckConstraint(
                condition=~Q(verdict="accept") | Q(modes=[]), name="accepted_window_has_no_modes"
            ),
        ]


class AuditEvent(models.Model):
    """Who did what, when, with the state before and after. Never updated or deleted."""

    study = models.ForeignKey(Study, on_delete=models.PROTECT, related_name="audit_events")
    annotation = models.ForeignKey(
        Annotation, on_delete=models.PROTECT, null=True, blank=True, related_name="audit_events"
    )
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    action = models.CharField(max_length=40)
    at = models.DateTimeField(auto_now_add=True)
    before = models.JSONField(default=dict, blank=True)
    after = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["at", "pk"]
        indexes = [
            models.Index(fields=["annotation", "at"]),
            # A person's last action in a study (the dashboard's idle people): one index probe each.
            models.Index(fields=["study", "actor", "at"], name="audit_last_action_of_actor"),
        ]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor} {self.action}"


class CaptionImportJob(models.Model):
    """A caption file imported by a background job (the study page's imports, or the API's
    import jobs): where it stands, then what it stored or why it was refused.

    While it runs, its counts live in the cache, not here (``annotation.services.caption_jobs``):
    the import writes in one transaction, so no row it touches can show progress before the end.
    """

    class Format(models.TextChoices):
        JSONL = "jsonl", "JSON Lines"
        CLIP_CC = "clip-cc", "CLIP-CC-Bench model file"

    class State(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        REFUSED = "refused", "refused (nothing stored)"
        FAILED = "failed"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="caption_import_jobs")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    file_name = models.CharField(max_length=255, help_text="the uploaded file's name")
    format = models.CharField(max_length=10, choices=Format.choices, default=Format.JSONL)
    model = models.CharField(max_length=200, blank=True, help_text="the model of a clip-cc file")
    keep_invalid = models.BooleanField(default=False)
    # The uploaded bytes, in the media storage that every worker shares; removed when the job ends.
    upload = models.FileField(upload_to="imports/captions/", blank=True, max_length=400)
    # The uploaded bytes' SHA-256, kept after the file is removed: the same file posted again
    # (a repeated click, a retried request) finds its job by it.
    sha256 = models.CharField(max_length=64, blank=True)
    state = models.CharField(max_length=10, choices=State.choices, default=State.QUEUED)
    stored = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    # Done: {"stored", "kept_invalid", "models_created", "errors" (of the captions kept invalid)}.
    report = models.JSONField(default=dict, blank=True)
    # Refused: every error ("line N, field: reason"); failed: why.
    errors = models.JSONField(default=list, blank=True)
    # The Celery task id, chosen before sending: a redelivered or retried task carries it.
    task_id = models.CharField(max_length=64, blank=True)
    # Set by each claim; a run whose token was replaced has been taken over and stores nothing.
    run_token = models.CharField(max_length=32, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0, help_text="how many runs claimed it")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(state__in=["queued", "running", "done", "refused", "failed"]),
                name="caption_import_job_state_known",
            ),
            models.CheckConstraint(
                condition=Q(format__in=["jsonl", "clip-cc"]), name="caption_import_job_format_known"
            ),
            models.CheckConstraint(
                condition=Q(stored__lte=F("total")), name="caption_import_job_stored_within_total"
            ),
        ]
        indexes = [models.Index(fields=["study", "state"])]

    def __str__(self) -> str:
        return f"caption import #{self.pk} of {self.file_name} into {self.study.slug} ({self.state})"

    @property
    def finished(self) -> bool:
        return self.state in {self.State.DONE, self.State.REFUSED, self.State.FAILED}


class UnsentJob(models.Model):
    """A job whose message the broker did not take (Redis stopped or restarting): kept here so
    that the workers' recovery clock sends it once the broker answers again
    (:func:`annotation.jobs.unsent_jobs_send`). The job's own record (a scoring job, a caption
    import, a profile export, a clip's media) stays queued meanwhile."""

    # The task's dotted path and its arguments: what job_send is called with.
    task = models.CharField(max_length=200)
    args = models.JSONField(default=list)
    task_id = models.CharField(max_length=64, blank=True)
    queue = models.CharField(max_length=100, blank=True)
    # task and args as one string: a job is kept once, however often sending it failed.
    key = models.CharField(max_length=400, unique=True)
    error = models.TextField(blank=True, help_text="what the broker answered")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "pk"]

    def __str__(self) -> str:
        return f"unsent {self.task}{tuple(self.args)}"


# The tables of people's participation live in their own module (by responsibility, to keep each
# file readable); they import the study from above, so they come last.
from annotation.models.participation import (  # noqa: E402, F401 (re-exported)
    ConsentRecord,
    ConsentVersion,
    GuidelineNotice,
    GuidelineVersion,
    Participant,
    RecruitmentKey,
    RecruitmentLink,
    Withdrawal,
)
from annotation.models.sessions import SignedInSession  # noqa: E402, F401 (re-exported)
