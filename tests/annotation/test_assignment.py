"""Assignment designs without a database: who sees which caption, in which order."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

from annotation.rules import assignment
from annotation.rules.assignment import Item, plan_assignment, spacing_ok

MODELS = ("A", "B", "C")


def items(clips: int, models=MODELS) -> list[Item]:
    return [Item(f"c{c}-{m}", f"c{c}", m) for c in range(clips) for m in models]


def queues(plan) -> dict:
    """Each annotator's items in queue order: [(position, clip, caption, exposure)]."""
    by = defaultdict(list)
    for placed in plan.placed:
        clip = placed.caption.split("-")[0]
        by[placed.annotator].append((placed.position, clip, placed.caption, placed.exposure))
    return {person: sorted(rows) for person, rows in by.items()}


def test_one_model_per_clip_never_shows_an_annotator_two_models_of_a_clip():
    plan = plan_assignment(
        items=items(12), annotators=["ann", "bob", "cy"], seed=7, overlap_share=0.0
    )
    assert not plan.unplaced and len(plan.placed) == 36
    for rows in queues(plan).values():
        clips = [clip for _, clip, _, _ in rows]
        assert len(clips) == len(set(clips))
        assert {exposure for *_, exposure in rows} == {1}
        assert [position for position, *_ in rows] == list(range(1, len(rows) + 1))


def test_one_model_per_clip_balances_models_over_annotators_like_a_latin_square():
    plan = plan_assignment(items=items(12), annotators=["ann", "bob", "cy"], seed=3)
    seen = Counter((p.annotator, p.caption.split("-")[1]) for p in plan.placed)
    assert set(seen.values()) == {4}  # every annotator sees every model on 4 of the 12 clips


def test_overlap_follows_the_design_and_what_cannot_be_placed_is_reported():
    plan = plan_assignment(
        items=items(6), annotators=["ann", "bob", "cy", "dee"], seed=1, overlap_share=0.5
    )
    per_caption = Counter(p.caption for p in plan.placed)
    per_clip = defaultdict(list)
    for p in plan.placed:
        per_clip[p.caption.split("-")[0]].append(p.annotator)
    for annotators in per_clip.values():  # 4 annotators: at most 4 annotations per clip
        assert len(annotators) == len(set(annotators))
    assert len(plan.placed) + len(plan.unplaced) == 18 + 9
    assert all(count in (1, 2) for count in per_caption.values())
    assert all("one model per clip needs at least" in reason for _, reason in plan.unplaced)


def test_too_few_annotators_for_one_model_per_clip_leaves_captions_unplaced_saying_why():
    plan = plan_assignment(items=items(2), annotators=["ann"], seed=0)
    assert len(plan.placed) == 2 and len(plan.unplaced) == 4


@pytest.mark.parametrize("gap", [0, 1, 3, 5])
def test_spread_keeps_captions_of_one_clip_at_least_gap_items_apart(gap):
    plan = plan_assignment(
        items=items(10), annotators=["ann", "bob"], design=assignment.SPREAD, seed=11, gap=gap
    )
    assert not plan.unplaced and len(plan.placed) == 30
    for rows in queues(plan).values():
        clips = [clip for _, clip, _, _ in rows]
        assert spacing_ok(clips, gap)
        later = [exposure for *_, exposure in rows if exposure > 1]
        assert later  # two annotators, three models: someone sees a clip twice
        for position, clip, _, exposure in rows:
            assert exposure == 1 + sum(1 for p, c, _, _ in rows if c == clip and p < position)


def test_spread_that_cannot_be_met_is_refused_naming_the_annotator():
    with pytest.raises(assignment.DesignError, match="annotator ann"):
        plan_assignment(items=items(2), annotators=["ann"], design=assignment.SPREAD, gap=3)


def test_spacing_check_itself_catches_a_close_pair():
    assert spacing_ok(["a", "b", "a"], 1) and not spacing_ok(["a", "b", "a"], 2)


@pytest.mark.parametrize("design", assignment.DESIGNS)
def test_the_same_seed_gives_the_same_plan_and_another_seed_another_order(design):
    kwargs = {
        "items": items(10),
        "annotators": ["ann", "bob", "cy"],
        "design": design,
        "overlap_share": 0.3,
    }
    assert plan_assignment(seed=5, **kwargs) == plan_assignment(seed=5, **kwargs)
    if design != assignment.CLIP_BLOCKS:
        assert plan_assignment(seed=5, **kwargs).placed != plan_assignment(seed=6, **kwargs).placed


def test_clip_blocks_keeps_the_old_clip_by_clip_round_robin():
    plan = plan_assignment(items=items(2), annotators=["ann", "bob"], design=assignment.CLIP_BLOCKS)
    assert [(p.caption, p.annotator, p.exposure) for p in plan.placed if p.annotator == "ann"] == [
        ("c0-A", "ann", 1),
        ("c0-C", "ann", 2),
        ("c1-B", "ann", 1),
    ]


def test_new_captions_follow_what_an_annotator_already_holds():
    first = items(1)
    held = {"ann": first}
    plan = plan_assignment(
        items=items(2)[3:], annotators=["ann"], design=assignment.SPREAD, gap=0, held=held
    )
    assert sorted(p.position for p in plan.placed) == [4, 5, 6]
    plan = plan_assignment(items=[Item("c0-D", "c0", "D")], annotators=["ann", "bob"], held=held)
    assert [(p.annotator, p.exposure) for p in plan.placed] == [("bob", 1)]


def test_unknown_designs_and_bad_settings_are_refused():
    with pytest.raises(assignment.DesignError, match="Unknown assignment design"):
        plan_assignment(items=items(1), annotators=["ann"], design="by-vibes")
    with pytest.raises(assignment.DesignError, match="at least one annotator"):
        plan_assignment(items=items(1), annotators=[])


def test_captions_others_already_annotate_are_placed_only_as_often_as_still_needed():
    taken = {"c0-A": 1, "c0-B": 2}
    plan = plan_assignment(items=items(1), annotators=["ann", "bob", "cy"], taken=taken, overlap_share=1.0)
    assert Counter(p.caption for p in plan.placed) == {"c0-A": 1, "c0-C": 2}
