"""Words by caption language: hand-segmented Chinese and Japanese pairs, and what stays as it was.

Chinese hand segmentation follows the Peking University standard (一个 / 男人 / 在 / 骑 / 自行车);
Japanese follows UniDic short-unit words (自転 / 車, 乗っ / て / いる), the unit the segmenter
counts. Punctuation joins the word before it, as in English ("自行车。" is one word).
"""

from __future__ import annotations

import pytest

from scoring.metrics import edits, segment
from scoring.metrics.edits import WORD_THRESHOLDS

ZH_MAN = "一个男人在骑自行车"
ZH_WOMAN = "一个女人在骑红色自行车"
ZH_REWRITE = "一位老太太正推着婴儿车过马路"
JA_MAN = "男の人が自転車に乗っている。"
JA_WOMAN = "女の人が赤い自転車に乗っている。"
JA_REWRITE = "二匹の犬が公園で走り回っている。"


@pytest.mark.parametrize(("language", "text", "expected"), [
    ("zh", ZH_MAN, ["一个", "男人", "在", "骑", "自行车"]),
    ("zh", ZH_WOMAN, ["一个", "女人", "在", "骑", "红色", "自行车"]),
    ("zh", ZH_REWRITE, ["一位", "老太太", "正", "推着", "婴儿车", "过", "马路"]),
    ("zh", "一个男人，在骑自行车。", ["一个", "男人，", "在", "骑", "自行车。"]),
    ("zh", "A man, 一个人 riding.", ["A", "man,", "一个", "人", "riding."]),
    ("ja", JA_MAN, ["男", "の", "人", "が", "自転", "車", "に", "乗っ", "て", "いる。"]),
    ("ja", JA_WOMAN, ["女", "の", "人", "が", "赤い", "自転", "車", "に", "乗っ", "て", "いる。"]),
    ("ja", "「カメラがゆっくり左にパンする。」",
     ["「カメラ", "が", "ゆっくり", "左", "に", "パン", "する。」"]),
    ("en", ZH_MAN, [ZH_MAN]),
    ("other", "un homme  à vélo", ["un", "homme", "à", "vélo"]),
])
def test_words_are_cut_by_the_caption_language(language, text, expected):
    assert edits.words(text, language) == expected


@pytest.mark.parametrize(("language", "original", "corrected", "expected"), [
    ("zh", ZH_MAN, ZH_WOMAN, 2),        # 男人 -> 女人, + 红色
    ("zh", ZH_MAN, ZH_REWRITE, 7),      # nothing in common: the longer side's 7 words
    ("ja", JA_MAN, JA_WOMAN, 2),        # 男 -> 女, + 赤い
    ("ja", JA_MAN, JA_REWRITE, 7),      # keeps の, が, て, いる。
    ("zh", ZH_MAN, ZH_MAN, 0),
    ("en", ZH_MAN, ZH_WOMAN, 1),        # the whole unspaced sentence is one English "word"
])
def test_words_changed_counts_segmented_words(language, original, corrected, expected):
    assert edits.words_changed(original, corrected, language=language) == expected
    assert edits.edit_size(original, corrected, language=language).words_changed == expected


@pytest.mark.parametrize(("language", "original", "rewrite"), [
    ("zh", ZH_MAN, ZH_REWRITE), ("ja", JA_MAN, JA_REWRITE),
])
def test_a_full_rewrite_reaches_the_six_word_threshold(language, original, rewrite):
    assert edits.char_similarity(original, rewrite) < 0.55
    changed = edits.words_changed(original, rewrite, language=language)
    assert changed >= 6 and [t for t in WORD_THRESHOLDS if changed >= t] == [1, 3, 6]


def test_adding_spaces_between_chinese_words_is_not_an_edit():
    spaced = "一个 男人 在 骑 自行车"
    assert edits.words_changed(ZH_MAN, spaced) == 5  # English rules: 1 word became 5
    assert edits.words_changed(ZH_MAN, spaced, language="zh") == 0


@pytest.mark.parametrize(("language", "original", "corrected"), [
    ("zh", ZH_MAN, ZH_WOMAN), ("ja", JA_MAN, JA_WOMAN), ("zh", "一个男人\n在骑车。", "一个女人\n骑车"),
])
def test_the_redline_keeps_unspaced_words_together_and_counts_as_words_changed(
        language, original, corrected):
    diff = edits.word_diff(original, corrected, language=language)
    assert "".join(s.text for s in diff if s.op != "delete") == corrected
    assert "".join(s.text for s in diff if s.op != "insert") == original
    changed = edits.words_changed(original, corrected, language=language)
    inserted = sum(len(edits.words(s.text, language)) for s in diff if s.op == "insert")
    assert 0 < inserted <= changed


def test_the_chinese_redline_marks_the_changed_words():
    diff = edits.word_diff(ZH_MAN, ZH_WOMAN, language="zh")
    assert [(s.op, s.text) for s in diff] == [
        ("equal", "一个"), ("delete", "男人"), ("insert", "女人"), ("equal", "在骑"),
        ("insert", "红色"), ("equal", "自行车")]


def test_an_unknown_language_is_refused_naming_the_choices():
    with pytest.raises(segment.UnknownLanguage, match="choose one of en, zh, ja, other"):
        edits.words("text", "fr")


def test_the_segmenter_and_its_version_are_named():
    assert segment.segmenter("en") == segment.segmenter("other") == "whitespace"
    assert segment.segmenter("zh").startswith("rjieba-0.")
    assert segment.segmenter("ja").startswith("fugashi-1.") and "+unidic-lite-1." in segment.segmenter("ja")
