"""Request bodies whose fields are made once per class (annotation.api.workflow_bodies
.FieldsMadeOnce): each validates as DRF's own serializer does, valid and invalid bodies alike,
and instances validating at once in several threads each get their own answer."""

from __future__ import annotations

import threading

import pytest
from rest_framework import serializers

from annotation.api import workflow_bodies as bodies

TOO_LONG = "x" * (bodies.MAX_OVERVIEW_CHARS + 1)

EXAMPLES = {
    bodies.Draft: [
        {"base_version": 3, "changes": {"overview": {"verdict": "reject", "text": "A dog, not a cat.",
                                                     "modes": ["object"]}}},
        {"base_version": 4, "changes": {"windows": [{"index": 0, "verdict": "accept"},
                                                    {"index": 2, "scene": "<b>x</b>", "start": 1, "end": 2.5}]}},
        {"base_version": 5, "changes": {"segmentation": {"verdict": "reject", "modes": ["cut"],
                                                         "windows": [{"start": 0, "end": 2}]}},
         "ignored": True},
        {"base_version": 6, "changes": {"ui_state": {"unit": "overview"}, "active_seconds": 4.5,
                                        "telemetry": {"watched_share": 0.4, "watched": [[0, 2]], "seeks": 1,
                                                      "speeds": {"1": 3.0}}}},
        {"base_version": 0, "changes": {}},
        {"changes": {"overview": {"text": 5}}},
        {"base_version": "seven", "changes": {"overview": {"verdict": "maybe", "text": TOO_LONG}}},
        {"base_version": 8, "changes": {"windows": [{"index": -1, "start": "soon"}, {"verdict": "accept"}]}},
        {"base_version": 9, "changes": {"segmentation": {"windows": [{"start": 0}]},
                                        "telemetry": {"watched_share": 1.5, "watched": [[1]],
                                                      "speeds": {str(n): 1.0 for n in range(21)}}}},
        {"base_version": 10, "changes": {"ui_state": {"big": "y" * bodies.MAX_UI_STATE_CHARS}}},
        {"base_version": 11, "changes": "everything"},
        [],
    ],
    bodies.BaseVersion: [{"base_version": 1}, {"base_version": bodies.MAX_VERSION + 1}, {}],
    bodies.Submit: [{"base_version": 2, "replies": {"overview": "Fixed."}}, {"base_version": 2, "replies": {"a": 3}},
                    {"base_version": 2}],
    bodies.ReviewNext: [{}, {"order": "oldest"}, {"order": "newest"}],
    bodies.Amend: [{"changes": {"overview": {"verdict": "accept"}}}, {"changes": {"windows": "no"}}],
    bodies.Return: [{"units": [{"unit": "overview", "comment": "Say what the dog does."}], "comment": ""},
                    {"units": [{"comment": "no unit"}], "comment": 3}],
}


def plain(cls: type) -> type:
    """The same body with DRF's own fields: deep-copied for every instance."""
    return type(f"Plain{cls.__name__}", (cls,), {"fields": serializers.Serializer.__dict__["fields"]})


def answer(cls: type, data) -> tuple[bool, object]:
    body = cls(data=data)
    valid = body.is_valid()
    return valid, (body.validated_data if valid else body.errors)


@pytest.mark.parametrize("cls", list(EXAMPLES), ids=lambda cls: cls.__name__)
def test_a_body_validates_as_drfs_own_serializer_does(cls):
    assert issubclass(cls, bodies.FieldsMadeOnce)
    outcomes = set()
    for data in EXAMPLES[cls]:
        expected = answer(plain(cls), data)
        for _ in range(2):  # the fields made by the first, reused by the second
            assert answer(cls, data) == expected, data
        outcomes.add(expected[0])
    assert outcomes == {True, False}, "each class needs valid and invalid examples"


def test_the_fields_are_made_once_per_class():
    assert bodies.Draft().fields is bodies.Draft().fields
    assert bodies.Draft().fields is not bodies.BaseVersion().fields  # a subclass has its own
    assert set(bodies.Draft().fields) == {"base_version", "changes"}
    assert set(bodies.BaseVersion().fields) == {"base_version"}
    reference = plain(bodies.Draft)
    assert reference().fields is not reference().fields  # the comparison's reference is DRF's own


def test_bodies_validated_at_once_in_threads_each_get_their_own_answer():
    examples = EXAMPLES[bodies.Draft]
    expected = [answer(plain(bodies.Draft), data) for data in examples]
    wrong: list = []
    start = threading.Barrier(8)

    def validate(offset: int) -> None:
        start.wait()
        for step in range(300):
            position = (offset + step) % len(examples)
            got = answer(bodies.Draft, examples[position])
            if got != expected[position]:
                wrong.append((position, got))

    threads = [threading.Thread(target=validate, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert wrong == []
