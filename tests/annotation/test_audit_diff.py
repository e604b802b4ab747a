"""Audit events of autosaves hold only what changed, texts as patches that replay exactly."""

import pytest

from annotation.rules.audit_diff import apply_text_patch, pass_changes, text_patch


@pytest.mark.parametrize(("old", "new", "patch"), [
    ("", "", {"at": 0, "delete": 0, "insert": ""}),
    ("", "abc", {"at": 0, "delete": 0, "insert": "abc"}),
    ("abc", "", {"at": 0, "delete": 3, "insert": ""}),
    ("a red car", "a blue car", {"at": 2, "delete": 3, "insert": "blue"}),
    ("aaa", "aaaa", {"at": 3, "delete": 0, "insert": "a"}),
    ("abcabc", "abc", {"at": 3, "delete": 3, "insert": ""}),
    ("xyz", "xyz", {"at": 3, "delete": 0, "insert": ""}),
])
def test_text_patch_keeps_only_the_changed_middle(old, new, patch):
    assert text_patch(old, new) == patch
    assert apply_text_patch(old, patch) == new


def test_a_patch_replays_any_pair_of_texts():
    from itertools import product

    texts = ["", "a", "ab", "ba", "aba", "abab", "bb"]
    for old, new in product(texts, repeat=2):
        assert apply_text_patch(old, text_patch(old, new)) == new


def snapshot(text="", verdict="", windows=()):
    return {"overview": {"verdict": verdict, "text": text, "modes": []},
            "windows": list(windows),
            "segmentation": {"verdict": "", "modes": [], "windows": []}}


def test_only_changed_fields_are_kept_and_texts_become_patches():
    long_text = "word " * 10_000
    before = snapshot(long_text, "reject")
    after = snapshot(long_text + "more", "reject", windows=[
        {"index": 2, "verdict": "reject", "scene": "A dog.", "shot": "", "start": 0.0, "end": 2.0,
         "modes": ["factual"]}])
    old, new = pass_changes(before, after)
    assert new["overview.text"] == {"at": len(long_text), "delete": 0, "insert": "more"}
    assert "overview.text" not in old and "overview.verdict" not in new
    assert new["window:2.scene"] == {"at": 0, "delete": 0, "insert": "A dog."}
    assert (old["window:2.verdict"], new["window:2.verdict"]) == (None, "reject")
    assert len(repr(new)) < 1_000
