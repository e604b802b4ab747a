"""Request bodies of the workflow API: the autosave, QC's amendments, a return, an assignment.

They check the shape, the types and the sizes of what a client sends, so that a wrong type
answers 400 naming the field (``changes.windows[0].start``) before any service runs. The rules a
service knows better (which verdicts, modes and spans make sense) stay in the services. Limits on
text are the import limits: an autosave may not store what an import would refuse.
"""

from __future__ import annotations

import json

from rest_framework import serializers
from rest_framework.utils.serializer_helpers import BindingDict

from annotation.interchange.formats import MAX_OVERVIEW_CHARS, MAX_WINDOW_TEXT_CHARS, MAX_WINDOWS
from annotation.models import AssignmentDesign, CorrectionPass
from annotation.services.workflow import (
    MAX_ACTIVE_SECONDS_PER_SAVE,
    MAX_RETURN_COMMENT_CHARS,
    MAX_UI_STATE_CHARS,
)

# Far above a real taxonomy (Redline's has about a dozen modes). A caption's windows are bounded
# by the import's limit (annotation.interchange.formats.MAX_WINDOWS), so that every imported timeline fits.
MAX_MODES = 100
MAX_VERSION = 2**31 - 1


class FieldsMadeOnce(serializers.Serializer):
    """A request body whose fields are made once per class and shared by all its instances.

    DRF deep-copies a serializer's declared fields, nested serializers and all, for every
    instance: for the autosave's body a tenth of the request's CPU (bench/bench_request_cpu.py).
    The fields of these bodies keep nothing of one validation for the next (the data, the errors
    and the validated data live on the instance that validates, and in local variables) and none
    reads the serializer's context, so they are made and bound once, to an instance of the class
    that holds nothing else (tests/annotation/test_request_bodies.py compares them with DRF's own).
    """

    @property
    def fields(self) -> BindingDict:
        cls = type(self)
        made = cls.__dict__.get("_fields_made_once")
        if made is None:
            holder = cls()
            made = BindingDict(holder)
            for name, field in holder.get_fields().items():
                made[name] = field
            cls._fields_made_once = made
        return made


class Text(serializers.CharField):
    """A JSON string: numbers are not silently turned into text."""

    def __init__(self, **kwargs):
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


def verdict_field():
    return serializers.ChoiceField(choices=CorrectionPass.Verdict.values, required=False)


def modes_field():
    return serializers.ListField(
        child=Text(max_length=100), max_length=MAX_MODES, required=False,
        help_text="failure-mode keys of the study's taxonomy",
    )


class OverviewChange(serializers.Serializer):
    verdict = verdict_field()
    text = Text(allow_blank=True, max_length=MAX_OVERVIEW_CHARS, required=False)
    modes = modes_field()


class WindowChange(serializers.Serializer):
    index = serializers.IntegerField(min_value=0, max_value=MAX_WINDOWS - 1)
    verdict = verdict_field()
    scene = Text(allow_blank=True, max_length=MAX_WINDOW_TEXT_CHARS, required=False)
    shot = Text(allow_blank=True, max_length=MAX_WINDOW_TEXT_CHARS, required=False)
    start = serializers.FloatField(required=False)
    end = serializers.FloatField(required=False)
    modes = modes_field()


class TimelineWindow(serializers.Serializer):
    start = serializers.FloatField()
    end = serializers.FloatField()
    scene = Text(allow_blank=True, max_length=MAX_WINDOW_TEXT_CHARS, required=False)
    shot = Text(allow_blank=True, max_length=MAX_WINDOW_TEXT_CHARS, required=False)


class SegmentationChange(serializers.Serializer):
    verdict = verdict_field()
    modes = modes_field()
    windows = serializers.ListField(
        child=TimelineWindow(), max_length=MAX_WINDOWS, required=False,
        help_text="the corrected window boundaries, in order",
    )


class Telemetry(serializers.Serializer):
    """What the workspace records about watching the clip. The review queue ranks fast
    accepts by `watched_share`, so it must be a number from 0 to 1."""

    watched_share = serializers.FloatField(min_value=0, max_value=1, required=False)
    watched = serializers.ListField(
        child=serializers.ListField(
            child=serializers.FloatField(min_value=0), min_length=2, max_length=2
        ),
        max_length=MAX_WINDOWS, required=False, help_text="played intervals [from, to] in seconds",
    )
    seeks = serializers.IntegerField(min_value=0, max_value=MAX_VERSION, required=False)
    speeds = serializers.DictField(
        child=serializers.FloatField(min_value=0), required=False,
        help_text="seconds played at each playback rate",
    )

    def validate_speeds(self, speeds):
        if len(speeds) > 20:
            raise serializers.ValidationError("At most 20 playback rates.")
        return speeds


class PassChanges(serializers.Serializer):
    """Changes to a correction pass; every key is optional and only the keys sent change."""

    overview = OverviewChange(required=False)
    windows = serializers.ListField(child=WindowChange(), max_length=MAX_WINDOWS, required=False)
    segmentation = SegmentationChange(required=False)


class DraftChanges(PassChanges):
    ui_state = serializers.DictField(
        required=False, help_text="where the workspace was (unit, time, focus): restored on reopen"
    )
    telemetry = Telemetry(required=False)
    active_seconds = serializers.FloatField(
        min_value=0, max_value=10**6, required=False,
        help_text=f"active seconds to add (at most {MAX_ACTIVE_SECONDS_PER_SAVE} count per save)",
    )

    def validate_ui_state(self, ui_state):
        if len(json.dumps(ui_state)) > MAX_UI_STATE_CHARS:
            raise serializers.ValidationError(
                f"At most {MAX_UI_STATE_CHARS:,} characters of JSON."
            )
        return ui_state


class BaseVersion(FieldsMadeOnce):
    base_version = serializers.IntegerField(
        min_value=1, max_value=MAX_VERSION, help_text="the version the client's change is based on"
    )


class Draft(BaseVersion):
    changes = DraftChanges()


class Amend(FieldsMadeOnce):
    changes = PassChanges()


class Submit(BaseVersion):
    replies = serializers.DictField(
        child=Text(allow_blank=True, max_length=MAX_RETURN_COMMENT_CHARS), default=dict,
        help_text="after a return: {unit: the annotator's answer to the reviewer's comment}",
    )


class ReturnedUnit(serializers.Serializer):
    unit = Text(max_length=40, help_text='"overview", "segmentation" or "window:<index>"')
    comment = Text(allow_blank=True, max_length=MAX_RETURN_COMMENT_CHARS, required=False)


class Return(FieldsMadeOnce):
    units = serializers.ListField(
        child=ReturnedUnit(), max_length=MAX_WINDOWS, default=list,
        help_text="the units to fix, each with what to fix",
    )
    comment = Text(allow_blank=True, max_length=MAX_RETURN_COMMENT_CHARS, default="")


class ReviewNext(FieldsMadeOnce):
    order = serializers.ChoiceField(choices=["risk", "oldest"], required=False)


class EditSize(serializers.Serializer):
    study = serializers.SlugField(max_length=60, help_text="the study whose texts these are")
    original = Text(allow_blank=True, max_length=MAX_OVERVIEW_CHARS)
    corrected = Text(allow_blank=True, max_length=MAX_OVERVIEW_CHARS)
    near_total_cut = serializers.FloatField(
        min_value=0, max_value=1, required=False, help_text="default: the study's"
    )


class Assign(serializers.Serializer):
    annotators = serializers.ListField(child=Text(max_length=150), min_length=1, max_length=1000)
    overlap_share = serializers.FloatField(min_value=0, max_value=1, required=False,
                                           help_text="left out: the study's overlap setting")
    # Left out: the study's own seed, design and spacing (annotation.rules.assignment).
    seed = serializers.IntegerField(required=False, min_value=0, max_value=2**63 - 1)
    design = serializers.ChoiceField(choices=AssignmentDesign.values, required=False)
    gap = serializers.IntegerField(min_value=0, max_value=1000, required=False)


# --------------------------------------------------------------------------- answers
# What the workflow API answers, declared for the API schema (/api/schema/). Views build these
# answers as plain dicts; the schema test (tests/test_api_schema.py) checks they match.


class Error(serializers.Serializer):
    """A refusal: `detail` says why in words; a 400 also keys each message by its field."""

    detail = serializers.CharField()


class OverviewVersion(serializers.Serializer):
    verdict = serializers.CharField(allow_blank=True)
    text = serializers.CharField(allow_blank=True)
    modes = serializers.ListField(child=serializers.CharField())


class WindowVersion(serializers.Serializer):
    index = serializers.IntegerField()
    verdict = serializers.CharField(allow_blank=True)
    scene = serializers.CharField(allow_blank=True)
    shot = serializers.CharField(allow_blank=True)
    start = serializers.FloatField()
    end = serializers.FloatField()
    modes = serializers.ListField(child=serializers.CharField())


class SegmentationVersion(serializers.Serializer):
    verdict = serializers.CharField(allow_blank=True)
    modes = serializers.ListField(child=serializers.CharField())
    windows = serializers.ListField(child=serializers.DictField())


class PassVersion(serializers.Serializer):
    """A correction pass; empty until the pass exists (the QC pass exists once QC amends)."""

    overview = OverviewVersion(required=False)
    windows = serializers.ListField(child=WindowVersion(), required=False)
    segmentation = SegmentationVersion(required=False)


class ReturnedUnitThread(serializers.Serializer):
    unit = serializers.CharField()
    comment = serializers.CharField(allow_blank=True)
    reply = serializers.CharField(allow_blank=True)


class UndoOffer(serializers.Serializer):
    """A decision that may still be undone (POST .../undo/), and for how long."""

    action = serializers.ChoiceField(choices=["lock_overview", "submit", "approve", "amend"])
    until = serializers.DateTimeField()
    seconds_left = serializers.FloatField()


class Snapshot(serializers.Serializer):
    """An annotation's state: what an autosave answers, and `current` in a 409."""

    id = serializers.IntegerField()
    state = serializers.CharField()
    version = serializers.IntegerField()
    overview_locked = serializers.BooleanField()
    return_comment = serializers.CharField(allow_blank=True)
    returned_units = serializers.ListField(child=ReturnedUnitThread(), required=False)
    reviewer = serializers.CharField(allow_null=True)
    claim_expires_at = serializers.DateTimeField(allow_null=True)
    undo = UndoOffer(allow_null=True, help_text="the last decision, while it may still be undone; "
                     "in the workspace payload only for the person who took it")
    active_seconds = serializers.FloatField()
    telemetry = serializers.DictField()
    ui_state = serializers.DictField()
    annotator_pass = PassVersion()
    qc_pass = PassVersion()


class ConflictAnswer(Error):
    current = Snapshot(help_text="the annotation as it is now")


class ClipFacts(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    duration = serializers.FloatField()
    fps = serializers.FloatField()
    video_url = serializers.CharField()
    poster_url = serializers.CharField(allow_null=True)
    shot_changes = serializers.ListField(child=serializers.FloatField(), required=False)


class CaptionWindow(serializers.Serializer):
    index = serializers.IntegerField()
    start = serializers.FloatField()
    end = serializers.FloatField()
    scene = serializers.CharField(allow_blank=True)
    shot = serializers.CharField(allow_blank=True)


class CaptionFacts(serializers.Serializer):
    model = serializers.CharField(help_text="the neutral alias, or the name for those who see it")
    overview = serializers.CharField(allow_blank=True)
    windows = serializers.ListField(child=CaptionWindow())


class ModeFacts(serializers.Serializer):
    key = serializers.CharField()
    name = serializers.CharField()
    definition = serializers.CharField(allow_blank=True)
    decision_test = serializers.CharField(allow_blank=True)
    level = serializers.CharField()


class TaxonomyFacts(serializers.Serializer):
    name = serializers.CharField()
    precedence_rules = serializers.JSONField()
    modes = serializers.ListField(child=ModeFacts())


class Workspace(Snapshot):
    """Everything the workspace and the review page need about one annotation."""

    study = serializers.CharField()
    undo_seconds = serializers.IntegerField(help_text="how long decisions can be undone (UNDO_SECONDS)")
    near_total_cut = serializers.FloatField()
    annotator = serializers.CharField()
    clip = ClipFacts()
    caption = CaptionFacts()
    taxonomy = TaxonomyFacts()
    final = serializers.JSONField(
        allow_null=True, help_text="an approved annotation's final caption (final overview, windows, "
        "timeline and edit sizes, as the corrected JSON Lines export writes it); null before approval")


class Opened(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.CharField()


class QueueItem(serializers.Serializer):
    id = serializers.IntegerField()
    state = serializers.CharField()
    clip = serializers.CharField()
    model = serializers.CharField(help_text="the neutral alias")
    url = serializers.CharField()
    windows = serializers.IntegerField(required=False)
    return_comment = serializers.CharField(allow_blank=True, required=False)


class AnnotatorQueue(serializers.Serializer):
    counts = serializers.DictField(child=serializers.IntegerField(), help_text="items per state")
    total = serializers.IntegerField()
    done = serializers.IntegerField()
    returned = serializers.IntegerField(required=False)
    items = serializers.ListField(child=QueueItem())
    next = serializers.CharField(allow_null=True, help_text="`after` for the next page")


class ReviewItem(serializers.Serializer):
    id = serializers.IntegerField()
    state = serializers.CharField()
    clip = serializers.CharField()
    model = serializers.CharField(help_text="the neutral alias")
    annotator = serializers.CharField()
    reviewer = serializers.CharField(allow_null=True)
    claim_expires_at = serializers.DateTimeField(allow_null=True)
    submitted_at = serializers.DateTimeField(allow_null=True)
    overview_verdict = serializers.CharField(allow_blank=True)
    risk = serializers.FloatField()
    risk_reasons = serializers.ListField(child=serializers.CharField())
    url = serializers.CharField()


class ReviewQueue(serializers.Serializer):
    order = serializers.CharField()
    count = serializers.IntegerField(help_text="items in the filtered queue, counted up to 1,000")
    count_capped = serializers.BooleanField(help_text="true: there are more than `count` (the count stops at 1,000)")
    items = serializers.ListField(child=ReviewItem())
    next = serializers.CharField(allow_null=True, help_text="`after` for the next page")


class DiffSegment(serializers.Serializer):
    op = serializers.ChoiceField(choices=["equal", "insert", "delete"])
    text = serializers.CharField(allow_blank=True)


class EditSizeAnswer(serializers.Serializer):
    language = serializers.CharField(help_text="the study's caption language, which says what a word is")
    words_changed = serializers.IntegerField()
    char_similarity = serializers.FloatField()
    near_total = serializers.BooleanField()
    length_change = serializers.FloatField(
        allow_null=True, help_text="relative change in characters; null when the original is empty "
                                   "(a text written from nothing has no relative change)")
    direction = serializers.CharField()
    diff = serializers.ListField(child=DiffSegment())


class AuditEntry(serializers.Serializer):
    at = serializers.DateTimeField()
    actor = serializers.CharField(allow_null=True)
    action = serializers.CharField()
    before = serializers.DictField()
    after = serializers.DictField()


class Assigned(serializers.Serializer):
    created = serializers.IntegerField()
    skipped = serializers.IntegerField()
    design = serializers.ChoiceField(choices=AssignmentDesign.values)
    reasons = serializers.DictField(
        child=serializers.IntegerField(), help_text="why captions were left unassigned: how many"
    )
    detail = serializers.CharField()
