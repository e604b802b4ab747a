"""Edit size: hand-computed cases for every measure, and the redline's promises."""

from __future__ import annotations

import math
from dataclasses import asdict

import pytest
from rapidfuzz.distance import Levenshtein

from scoring.metrics.edits import (
    DiffOp,
    DiffSegment,
    EditSize,
    char_similarity,
    chars_changed,
    edit_size,
    length_change,
    near_total,
    normalise_text,
    repair_direction,
    word_diff,
    words,
    words_changed,
)

# (original, corrected, words changed), each counted by hand.
WORDS_CHANGED_CASES = [
    ("a man walks a dog", "a man walks a dog", 0),
    ("a b c", "a x c", 1),
    ("the red car stopped", "the big shiny blue fast vehicle stopped", 5),
    ("the big shiny blue fast vehicle stopped", "the red car stopped", 5),
    ("a man walks", "a tall old man slowly walks", 3),
    ("a tall old man walks", "a man walks", 2),
    ("a b c d e", "x b c d y", 2),
    ("", "two words", 2),
    ("two words", "", 2),
    ("", "", 0),
    ("a b", "b a", 2),
    ("the dog runs", "the Dog runs", 1),
    ("the dog runs", "the dog runs.", 1),
    ("it’s raining", "it's raining", 1),
    ("a  man\nwalks\t a dog ", " a man walks a dog", 0),
]


@pytest.mark.parametrize(("original", "corrected", "expected"), WORDS_CHANGED_CASES)
def test_words_changed_counts_each_block_at_its_longer_side(
    original: str, corrected: str, expected: int
) -> None:
    assert words_changed(original, corrected) == expected


@pytest.mark.parametrize(("original", "corrected", "expected"), WORDS_CHANGED_CASES)
def test_words_changed_equals_levenshtein_distance_over_words(
    original: str, corrected: str, expected: int
) -> None:
    assert words_changed(original, corrected) == Levenshtein.distance(
        words(original), words(corrected)
    )


def test_words_are_nfc_normalised_before_comparison() -> None:
    decomposed = "cafe\u0301 noir"
    composed = "caf\u00e9 noir"
    assert words_changed(decomposed, composed) == 0


@pytest.mark.parametrize(
    ("original", "corrected", "expected"),
    [
        ("abcd", "abce", 0.75),
        ("kitten", "sitting", 8 / 13),
        ("", "", 1.0),
        ("abc", "", 0.0),
        ("abc", "xyz", 0.0),
        ("a  b\n", "a b", 1.0),
        ("A man walks.", "A man walks.", 1.0),
    ],
)
def test_char_similarity_is_twice_the_lcs_over_the_total_length(
    original: str, corrected: str, expected: float
) -> None:
    assert char_similarity(original, corrected) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("original", "corrected", "expected"),
    [("kitten", "sitting", 3), ("same", "same", 0), ("", "abc", 3), ("a \n b", "a b", 0)],
)
def test_chars_changed_is_the_character_levenshtein_distance(
    original: str, corrected: str, expected: int
) -> None:
    assert chars_changed(original, corrected) == expected


@pytest.mark.parametrize(
    ("similarity", "cut", "expected"),
    [(0.549, 0.55, True), (0.55, 0.55, False), (0.9, 0.55, False), (0.0, 0.55, True),
     (0.6, 0.7, True)],
)
def test_near_total_means_similarity_strictly_below_the_cut(
    similarity: float, cut: float, expected: bool
) -> None:
    assert near_total(similarity, cut) is expected


@pytest.mark.parametrize(
    ("original", "corrected", "expected"),
    [
        ("abcd", "abcdefgh", 1.0),
        ("abcdefghij", "abcdefghi", -0.1),
        ("same length", "SAME LENGTH", 0.0),
        ("a   b", "a b", 0.0),
        ("", "", 0.0),
        ("", "new", math.inf),
        ("gone", "", -1.0),
    ],
)
def test_length_change_is_relative_to_the_original_in_characters(
    original: str, corrected: str, expected: float
) -> None:
    assert length_change(original, corrected) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("change", "band", "expected"),
    [
        (0.05, 0.05, "same"),
        (-0.05, 0.05, "same"),
        (0.0501, 0.05, "lengthened"),
        (-0.06, 0.05, "shortened"),
        (0.0, 0.0, "same"),
        (0.001, 0.0, "lengthened"),
        (-0.001, 0.0, "shortened"),
        (0.08, 0.10, "same"),
        (0.11, 0.10, "lengthened"),
        (-0.11, 0.10, "shortened"),
        (math.inf, 0.05, "lengthened"),
    ],
)
def test_repair_direction_is_same_inside_the_closed_band(
    change: float, band: float, expected: str
) -> None:
    assert repair_direction(change, band) == expected


def test_repair_direction_refuses_a_negative_band() -> None:
    with pytest.raises(ValueError):
        repair_direction(0.1, -0.05)


def test_edit_size_combines_every_measure() -> None:
    # 20 characters -> 21 characters: +5% exactly, which is 'same' in the default band.
    original = "a red car is parked."
    corrected = "a blue car is parked."
    assert len(original) == 20 and len(corrected) == 21
    size = edit_size(original, corrected)
    assert isinstance(size, EditSize)
    assert asdict(size) == {
        "words_changed": 1,
        "original_words": 5,
        "corrected_words": 5,
        "char_similarity": pytest.approx(2 * 18 / 41),
        "chars_changed": 4,  # "red" -> "blue": three substitutions and one insertion
        "near_total": False,
        "length_change": pytest.approx(0.05),
        "direction": "same",
    }


@pytest.mark.parametrize(("band", "expected"), [(0.0, "lengthened"), (0.05, "same")])
def test_edit_size_passes_the_band_through(band: float, expected: str) -> None:
    assert edit_size("a red car is parked.", "a blue car is parked.", band=band).direction == (
        expected
    )


def test_edit_size_flags_a_rewrite_as_near_total() -> None:
    size = edit_size("A man walks a dog in the park.", "Two cars collide on a bridge at night.")
    assert size.near_total
    assert size.char_similarity < 0.55


def test_edit_size_passes_the_near_total_cut_through() -> None:
    size = edit_size("abcd", "abce", near_total_cut=0.8)
    assert size.char_similarity == pytest.approx(0.75)
    assert size.near_total


@pytest.mark.parametrize(
    ("text", "expected"),
    [(" a\tb \n\nc ", "a b c"), ("", ""), ("cafe\u0301", "caf\u00e9")],
)
def test_normalise_text_collapses_whitespace_and_composes_characters(
    text: str, expected: str
) -> None:
    assert normalise_text(text) == expected


@pytest.mark.parametrize(
    ("original", "corrected", "expected"),
    [
        (
            "the red car stopped",
            "the big blue car stopped",
            [("equal", "the"), ("delete", " red"), ("insert", " big blue"),
             ("equal", " car stopped")],
        ),
        ("a b c", "a b c", [("equal", "a b c")]),
        ("", "new text", [("insert", "new text")]),
        ("old text", "", [("delete", "old text")]),
        ("x a b", "a b", [("delete", "x"), ("equal", " a b")]),
        ("a b", "a b c", [("equal", "a b"), ("insert", " c")]),
        ("a b c", "a b", [("equal", "a b"), ("delete", " c")]),
        (
            "One.\nTwo three.",
            "One.\nTwo four.",
            [("equal", "One.\nTwo"), ("delete", " three."), ("insert", " four.")],
        ),
        ("the dog", "the Dog.", [("equal", "the"), ("delete", " dog"), ("insert", " Dog.")]),
    ],
)
def test_word_diff_gives_readable_segments(
    original: str, corrected: str, expected: list[tuple[DiffOp, str]]
) -> None:
    assert word_diff(original, corrected) == [DiffSegment(op, text) for op, text in expected]


DIFF_PAIRS = [(original, corrected) for original, corrected, _ in WORDS_CHANGED_CASES] + [
    ("He walks.\n\nShe runs fast.", "He walks slowly.\n\nShe runs."),
    (" leading space here", "leading space there "),
    ("a b c d e f g", "g f e d c b a"),
]


def _squash(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize(("original", "corrected"), DIFF_PAIRS)
def test_word_diff_rebuilds_both_texts_up_to_whitespace(original: str, corrected: str) -> None:
    segments = word_diff(original, corrected)
    rebuilt_original = "".join(s.text for s in segments if s.op != "insert")
    rebuilt_corrected = "".join(s.text for s in segments if s.op != "delete")
    assert _squash(rebuilt_original) == _squash(original)
    assert _squash(rebuilt_corrected) == _squash(corrected)


@pytest.mark.parametrize(("original", "corrected"), DIFF_PAIRS)
def test_word_diff_shows_exactly_the_words_counted_as_changed(
    original: str, corrected: str
) -> None:
    segments = word_diff(original, corrected)
    counted = 0
    pending_delete = 0
    for segment in segments:
        size = len(segment.text.split())
        if segment.op == "delete":
            pending_delete = size
        elif segment.op == "insert":
            counted += max(pending_delete, size)
            pending_delete = 0
        else:
            counted += pending_delete
            pending_delete = 0
    counted += pending_delete
    assert counted == words_changed(original, corrected)


@pytest.mark.parametrize(("original", "corrected"), DIFF_PAIRS)
def test_word_diff_never_repeats_an_op_in_adjacent_segments(
    original: str, corrected: str
) -> None:
    ops = [segment.op for segment in word_diff(original, corrected)]
    assert all(a != b for a, b in zip(ops, ops[1:], strict=False))
    assert all(segment.text.strip() for segment in word_diff(original, corrected))


@pytest.mark.parametrize(("original", "corrected"), DIFF_PAIRS)
def test_edit_size_agrees_with_each_single_measure(original: str, corrected: str) -> None:
    size = edit_size(original, corrected)
    assert size.words_changed == words_changed(original, corrected)
    assert size.char_similarity == char_similarity(original, corrected)
    assert size.chars_changed == chars_changed(original, corrected)
    assert size.length_change == length_change(original, corrected)
    assert size.direction == repair_direction(length_change(original, corrected))
    assert size.near_total == near_total(char_similarity(original, corrected))
