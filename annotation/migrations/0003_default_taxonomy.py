"""Creates the default failure taxonomy (PROTOCOL.md section 2), version 1.

The modes are written out here rather than imported, so that this migration
keeps creating exactly version 1 whatever later code says.
"""

import hashlib
import json

from django.db import migrations

MODES = [
    ("factual", "Factual error",
     "An observable fact is stated wrongly: wrong person, object, action, attribute, count, "
     "location or spatial relation.",
     'Can one point at a frame and say "not that"?', "unit"),
    ("omission", "Important omission",
     "A central event or piece of information needed for an adequate description is missing; "
     "optional background detail is not marked.",
     "Would a reader with only the caption be misled?", "unit"),
    ("camera", "Camera / shot",
     "Camera motion, zoom, cuts, framing, occlusion or reflection is taken for something "
     "happening in the scene.",
     "Did the pixels move because the camera moved, or the world?", "unit"),
    ("segmentation", "Segmentation",
     "Windows merge distinct events, miss a shot change, sit on a fixed grid rather than on "
     "content, or are timestamped materially away from the event.",
     "Are the timestamps where the events are?", "caption"),
    ("inference", "Unsupported inference",
     "Intent, emotion, identity, cause or relationship asserted without support in the video, "
     "including identification from outside knowledge.",
     "Could any viewer verify this from the footage alone?", "unit"),
    ("temporal", "Temporal / order",
     "Order, timing, duration, repetition or simultaneity of events is materially "
     "misrepresented.",
     "Is what happened right but when wrong?", "unit"),
]
RULES = [
    {
        "prefer": "camera",
        "over": "factual",
        "rule": "When a misreading is caused by camera motion, tag the unit camera, not factual.",
    }
]
FIELDS = ("key", "name", "definition", "decision_test", "level")


def content_hash() -> str:
    payload = {
        "modes": [dict(zip(FIELDS, mode, strict=True)) for mode in MODES],
        "precedence_rules": RULES,
    }
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def create_default_taxonomy(apps, schema_editor):
    TaxonomyVersion = apps.get_model("annotation", "TaxonomyVersion")
    FailureMode = apps.get_model("annotation", "FailureMode")
    taxonomy, created = TaxonomyVersion.objects.get_or_create(
        name="redline",
        version=1,
        defaults={
            "description": "The six failure modes of the human-correction protocol.",
            "precedence_rules": RULES,
            "content_hash": content_hash(),
        },
    )
    if not created:
        return
    for position, (key, name, definition, decision_test, level) in enumerate(MODES):
        FailureMode.objects.create(
            taxonomy=taxonomy, key=key, name=name, definition=definition,
            decision_test=decision_test, level=level, position=position,
        )


class Migration(migrations.Migration):
    dependencies = [("annotation", "0002_window_timeline_triggers")]
    operations = [migrations.RunPython(create_default_taxonomy, migrations.RunPython.noop)]
