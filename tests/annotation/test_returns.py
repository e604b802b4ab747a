"""Returned units without a database: naming, checking, and which need a reply."""

import pytest

from annotation.rules import returns


def test_units_are_named_as_people_count_them():
    assert returns.all_units([2, 0, 1]) == [
        "overview",
        "window:0",
        "window:1",
        "window:2",
        "segmentation",
    ]
    assert [returns.unit_label(u) for u in ("overview", "window:0", "segmentation")] == [
        "Overview",
        "Window 1",
        "Segmentation",
    ]
    assert returns.window_index("window:x") is None


def test_named_units_come_back_in_the_captions_order_with_their_comments():
    named = returns.parse_units(
        [
            {"unit": "segmentation", "comment": " Cut at 3 s. "},
            {"unit": "overview", "comment": "Five."},
        ],
        [0, 1],
    )
    assert named == [
        {"unit": "overview", "comment": "Five."},
        {"unit": "segmentation", "comment": "Cut at 3 s."},
    ]


@pytest.mark.parametrize(
    ("requested", "message"),
    [
        ([], "Name at least one unit"),
        (["overview"], "expected {unit, comment}"),
        ([{"unit": "window:5", "comment": "x"}], "'window:5' is not a unit"),
        (
            [{"unit": "overview", "comment": "a"}, {"unit": "overview", "comment": "b"}],
            "Overview is named twice",
        ),
        ([{"unit": "window:1", "comment": ""}], "Window 2: say what to fix"),
    ],
)
def test_a_return_that_names_no_usable_unit_is_refused_saying_why(requested, message):
    with pytest.raises(ValueError, match=message):
        returns.parse_units(requested, [0, 1])


def test_only_unchanged_units_without_a_reply_are_unanswered():
    before = {"index": 1, "verdict": "accept"}
    returned = [
        {"unit": "window:1", "comment": "Look.", "before": before},
        {"unit": "overview", "comment": "Five.", "before": {"verdict": "accept"}},
    ]
    snapshot = {"overview": {"verdict": "reject"}, "windows": [before]}
    assert len(returns.unanswered(returned, snapshot, {})) == 1
    assert returns.unanswered(returned, snapshot, {"window:1": " "})[0].startswith(
        "Window 2 was returned"
    )
    assert returns.unanswered(returned, snapshot, {"window:1": "It is right."}) == []
