"""Scoring jobs and the scores they store. Every write goes through `scoring.services`.

A result is keyed by what was compared (`item_key`, e.g. ``annotation:12:window:40:scene``),
the metric, the judge or backend that computed it ('' when the metric has none) and the metric's
version. The key is one unique constraint on plain strings, so it works the same on SQLite and
PostgreSQL (a unique constraint over nullable foreign keys would let NULLs repeat), and running a
job again updates rows in place instead of adding new ones.
"""

from __future__ import annotations

import sys

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from annotation.models import Annotation, Caption, Study, Window


class ScoreJob(models.Model):
    """One request to score: a final verdict (automatic) or a whole study (on demand)."""

    class Kind(models.TextChoices):
        VERDICT = "verdict", "final verdict"
        STUDY = "study", "whole study"

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        PARTIAL = "partial", "partly failed"
        FAILED = "failed"
        CANCELLED = "cancelled"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="score_jobs")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    annotation = models.ForeignKey(
        Annotation, on_delete=models.CASCADE, null=True, blank=True, related_name="score_jobs"
    )
    # A study job limited to one clip: what a new final verdict changes (live scores).
    clip = models.ForeignKey(
        "annotation.Clip", on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    metrics = models.JSONField(default=list, help_text="metric names, in the order asked")
    judges = models.JSONField(default=list, blank=True, help_text="judges of embedding metrics")
    splitter = models.CharField(
        max_length=20, default="punkt",
        help_text="sentence splitter of the sentence-level embedding metrics (punkt or redline)")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    # A study job fans out into chunks (ScoreChunk); these count them.
    chunks_total = models.PositiveIntegerField(default=0)
    chunks_done = models.PositiveIntegerField(default=0)
    chunks_failed = models.PositiveIntegerField(default=0)
    # {"cospar@minilm": "overview: ...", "llmfacts_f1": "..."}: what failed, and why.
    errors = models.JSONField(default=dict, blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # The Celery task id, chosen before sending: a redelivered or retried task carries it.
    task_id = models.CharField(max_length=64, blank=True)
    # Set by each claim; a run whose token was replaced has been taken over and stops.
    run_token = models.CharField(max_length=32, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0, help_text="how many runs claimed it")
    # Of those runs, the ones that got further than every run before them (their progress_done
    # passed progress_seen): a run that made progress and died does not count against the job.
    runs_with_progress = models.PositiveSmallIntegerField(
        default=0, help_text="runs that got further than every run before them")
    progress_seen = models.PositiveIntegerField(
        default=0, help_text="the furthest progress_done a run of it reached, as its last claim found")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind="verdict", annotation__isnull=False)
                | Q(kind="study", annotation__isnull=True),
                name="score_job_verdict_has_annotation",
            ),
            models.CheckConstraint(
                condition=Q(
                    status__in=["queued", "running", "done", "partial", "failed", "cancelled"]
                ),
                name="score_job_status_known",
            ),
            models.CheckConstraint(
                condition=Q(progress_done__lte=F("progress_total")),
                name="score_job_progress_within_total",
            ),
        ]
        indexes = [models.Index(fields=["study", "created_at"])]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} scoring #{self.pk} of {self.study.slug} ({self.status})"

    @property
    def finished(self) -> bool:
        return self.status in {
            self.Status.DONE, self.Status.PARTIAL, self.Status.FAILED, self.Status.CANCELLED
        }


class ScoreChunk(models.Model):
    """One piece of a study job: one metric family (and judge) over the items of a few clips.

    ``items`` holds the texts to compare, as planned, so that a chunk scores the same thing
    whichever worker takes it and whenever. Any worker claims it (``queued`` to ``running``,
    with a fresh ``run_token``); its results, its ``done`` status and the job's counters are
    committed in one transaction, so a chunk redelivered after its worker died stores nothing
    twice and counts once.
    """

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"
        CANCELLED = "cancelled"

    job = models.ForeignKey(ScoreJob, on_delete=models.CASCADE, related_name="chunks")
    index = models.PositiveIntegerField()
    family = models.CharField(max_length=40)
    judge = models.CharField(max_length=200, blank=True)
    group = models.CharField(max_length=40)
    metrics = models.JSONField(default=list)
    # What the results are stored under, fixed when planned.
    label = models.CharField(max_length=200, blank=True, help_text="judge or backend")
    version = models.CharField(max_length=60, help_text="metric version")
    queue = models.CharField(max_length=60, blank=True)
    items = models.JSONField(default=list)
    item_count = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    task_id = models.CharField(max_length=80, blank=True)
    run_token = models.CharField(max_length=32, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    stored = models.PositiveIntegerField(default=0, help_text="result rows written")
    error = models.TextField(blank=True)
    worker = models.CharField(max_length=200, blank=True, help_text="the worker that ran it")
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    cpu_seconds = models.FloatField(default=0.0)

    class Meta:
        ordering = ["job", "index"]
        constraints = [
            models.UniqueConstraint(fields=["job", "index"], name="score_chunk_unique_index"),
            models.CheckConstraint(
                condition=Q(status__in=["queued", "running", "done", "failed", "cancelled"]),
                name="score_chunk_status_known",
            ),
        ]
        indexes = [models.Index(fields=["job", "status"])]

    def __str__(self) -> str:
        judge = f" ({self.judge})" if self.judge else ""
        return f"chunk {self.index} of job #{self.job_id}: {self.family}{judge}, {self.group}"

    @property
    def title(self) -> str:
        """How errors and pages name the chunk."""
        judge = f" ({self.judge})" if self.judge else ""
        return f"chunk {self.index} ({self.family}{judge}, {self.group}, {self.item_count} items)"


#: Subjects that compare a caption with texts of its clip (no single verdict owns the result).
CAPTION_SUBJECTS = [
    "caption_vs_reference",
    "caption_vs_approved",
    "caption_vs_gold",
    "matched_approved",
    "matched_gold",
]


class ScoreResult(models.Model):
    """One metric's value for one compared pair of texts."""

    class Subject(models.TextChoices):
        OVERVIEW = "overview", "overview: original vs final"
        WINDOW_SCENE = "window_scene", "window scene: original vs final"
        WINDOW_SHOT = "window_shot", "window shot: original vs final"
        CAPTION_VS_REFERENCE = "caption_vs_reference", "caption overview vs references"
        CAPTION_VS_APPROVED = "caption_vs_approved", (
            "caption overview vs the approved final overviews of the clip's other captions")
        CAPTION_VS_GOLD = "caption_vs_gold", (
            "caption overview vs the reviewer corrections of the clip's other captions")
        MATCHED_APPROVED = "matched_approved", (
            "accepted-rejected pair vs approved finals, leaving both out")
        MATCHED_GOLD = "matched_gold", "accepted-rejected pair vs corrections, leaving both out"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="score_results")
    caption = models.ForeignKey(Caption, on_delete=models.CASCADE, related_name="score_results")
    window = models.ForeignKey(
        Window, on_delete=models.CASCADE, null=True, blank=True, related_name="score_results"
    )
    annotation = models.ForeignKey(
        Annotation, on_delete=models.CASCADE, null=True, blank=True, related_name="score_results"
    )
    subject = models.CharField(max_length=30, choices=Subject.choices)
    item_key = models.CharField(max_length=120, help_text="what was compared, as one string")
    metric = models.CharField(max_length=60)
    judge_or_backend = models.CharField(max_length=200, blank=True)
    metric_version = models.CharField(max_length=60)
    value = models.FloatField(null=True, blank=True, help_text="empty when not a finite number")
    detail = models.JSONField(default=dict, blank=True)
    # What the value depends on (the texts compared, the reference set's members, the metric
    # version, CIDEr-D's idf documents), hashed: a study job re-scores only rows whose hash
    # differs from the one it plans (see scoring.chunks).
    dep_hash = models.CharField(max_length=64, blank=True)
    job = models.ForeignKey(
        ScoreJob, on_delete=models.SET_NULL, null=True, blank=True, related_name="results"
    )
    computed_at = models.DateTimeField()

    class Meta:
        ordering = ["study", "item_key", "metric", "judge_or_backend"]
        constraints = [
            models.UniqueConstraint(
                fields=["item_key", "metric", "judge_or_backend", "metric_version"],
                name="score_result_unique",
            ),
            models.CheckConstraint(
                condition=Q(subject__in=["window_scene", "window_shot"], window__isnull=False)
                | (~Q(subject__in=["window_scene", "window_shot"]) & Q(window__isnull=True)),
                name="score_result_window_iff_window_subject",
            ),
            models.CheckConstraint(
                condition=Q(subject__in=CAPTION_SUBJECTS, annotation__isnull=True)
                | (~Q(subject__in=CAPTION_SUBJECTS) & Q(annotation__isnull=False)),
                name="score_result_verdict_subjects_have_annotation",
            ),
        ]
        indexes = [
            models.Index(fields=["study", "subject", "metric"]),
            # The study's newest score (scoring.lifecycle.verdicts_not_scored): one index probe.
            models.Index(fields=["study", "computed_at"], name="score_result_newest"),
        ]

    def __str__(self) -> str:
        judge = f" [{self.judge_or_backend}]" if self.judge_or_backend else ""
        return f"{self.item_key} {self.metric}{judge} = {self.value}"


class ExternalScore(models.Model):
    """A per-caption score computed elsewhere (``manage.py import_scores``, the API, the study
    page): a Video-LLM judge's defect count, a rating, another toolkit's metric. Table 1 reads
    it as a row (a control unless it used the clip's imported references); the leaderboard can
    rank by it as a judge."""

    class Direction(models.TextChoices):
        HIGHER = "higher", "higher is better"
        LOWER = "lower", "lower is better"

    class References(models.TextChoices):
        NONE = "none", "no references (a control)"
        IMPORTED = "imported", "the clip's imported references"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="external_scores")
    caption = models.ForeignKey(Caption, on_delete=models.CASCADE, related_name="external_scores")
    metric = models.CharField(max_length=60)
    direction = models.CharField(max_length=6, choices=Direction.choices)
    version = models.CharField(max_length=200)
    source = models.CharField(max_length=200)
    references = models.CharField(max_length=8, choices=References.choices, default="none")
    value = models.FloatField()
    imported_at = models.DateTimeField()

    class Meta:
        ordering = ["study", "metric", "caption"]
        constraints = [
            models.UniqueConstraint(fields=["caption", "metric", "version", "source"],
                                    name="external_score_unique"),
            models.CheckConstraint(condition=Q(direction__in=["higher", "lower"]),
                                   name="external_score_direction_known"),
            models.CheckConstraint(condition=Q(references__in=["none", "imported"]),
                                   name="external_score_references_known"),
            # Finite: PostgreSQL orders NaN above every number and Infinity beyond the largest
            # float; SQLite stores NaN as NULL, which the column refuses.
            models.CheckConstraint(condition=Q(value__gte=-sys.float_info.max,
                                               value__lte=sys.float_info.max),
                                   name="external_score_value_finite"),
        ]

    def __str__(self) -> str:
        return f"{self.caption_id} {self.metric} ({self.source}) = {self.value}"


class SharedCacheEntry(models.Model):
    """A value every worker may reuse instead of computing it again (``scoring.shared_cache``):
    METEOR's statistics of a text pair, a judge's vector of a text. ``namespace`` names what
    computed it (with its version), ``key`` is a SHA-256 of the input; entries never change."""

    namespace = models.CharField(max_length=200)
    key = models.CharField(max_length=64)
    value = models.BinaryField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["namespace", "key"], name="shared_cache_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.namespace} {self.key[:12]}"
