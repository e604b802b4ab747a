"""Edit size between a machine-written text (the *original*) and its human correction.

Tokenisation, used by every function in this module:

- **Words.** What a word is depends on the caption language (every function that counts words
  takes ``language``, default ``en``; :mod:`scoring.metrics.segment` defines them): in English
  and other spaced languages the text is Unicode-NFC normalised and split on whitespace, a word
  being a maximal run of non-whitespace characters; Chinese (``zh``) and Japanese (``ja``) runs
  are cut into words by a dictionary segmenter. Words are compared exactly. Case and punctuation
  are kept, so "dog" -> "Dog." is one changed word. Why: a reviewer who fixed only a comma or a
  capital still made a correction (the "any correction" threshold must see it), and the count
  must equal what the redline from :func:`word_diff` shows.
- **Characters.** For character similarity, character distance and length, the text is NFC
  normalised, runs of whitespace (spaces, tabs, newlines) become one space and the ends are
  stripped: re-flowing or re-wrapping a text is not an edit.

Measures (see the project's spec, METRICS.md section 1 and PROTOCOL.md section 4):

- ``words_changed``: the two word lists are aligned with a Levenshtein alignment
  (``rapidfuzz.distance.Levenshtein.opcodes``); each run of non-equal operations is one block
  that counts ``max(len(source block), len(target block))`` (replacing 2 words by 5 counts 5).
  This equals the Levenshtein distance over the word lists.
- ``char_similarity``: normalised Indel similarity ``2 * LCS / (|a| + |b|)``
  (``rapidfuzz.fuzz.ratio / 100``); 1.0 means identical, two empty texts are identical.
- ``near_total``: a repair whose character similarity is below a cut (0.55 by default).
- ``length_change``: relative change in *characters*, ``(|corrected| - |original|) / |original|``.
- ``repair_direction``: 'lengthened' / 'shortened' / 'same' within a symmetric band.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rapidfuzz import fuzz
from rapidfuzz.distance import Levenshtein

from scoring.metrics import segment
from scoring.metrics.segment import DEFAULT_LANGUAGE

NEAR_TOTAL_CUT: float = 0.55
LENGTH_BAND: float = 0.05
#: Word thresholds at which a caption counts as failed (PROTOCOL.md section 4).
WORD_THRESHOLDS: tuple[int, ...] = (1, 3, 6, 16)

Direction = Literal["lengthened", "shortened", "same"]
DiffOp = Literal["equal", "insert", "delete"]

_WHITESPACE = re.compile(r"\s+")


def normalise_text(text: str) -> str:
    """Return ``text`` NFC-normalised with whitespace runs collapsed to one space, ends stripped."""
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFC", text)).strip()


def words(text: str, language: str = DEFAULT_LANGUAGE) -> list[str]:
    """Return the words of ``text`` in ``language`` (English: NFC whitespace-separated tokens)."""
    return segment.words(text, language)


@dataclass(frozen=True)
class _Block:
    """One aligned run: either equal words or a merged run of non-equal operations."""

    equal: bool
    src_start: int
    src_end: int
    dst_start: int
    dst_end: int

    @property
    def cost(self) -> int:
        """Words this block changes: 0 when equal, else the longer side."""
        if self.equal:
            return 0
        return max(self.src_end - self.src_start, self.dst_end - self.dst_start)


def _blocks(src: Sequence[str], dst: Sequence[str]) -> list[_Block]:
    """Align two word lists and merge consecutive non-equal operations into single blocks."""
    blocks: list[_Block] = []
    for op in Levenshtein.opcodes(src, dst):
        equal = op.tag == "equal"
        if blocks and not equal and not blocks[-1].equal:
            last = blocks[-1]
            blocks[-1] = _Block(False, last.src_start, op.src_end, last.dst_start, op.dest_end)
        else:
            blocks.append(_Block(equal, op.src_start, op.src_end, op.dest_start, op.dest_end))
    return blocks


def words_changed(original: str, corrected: str, *, language: str = DEFAULT_LANGUAGE) -> int:
    """Return how many words the correction changed (replacements count at the longer side).

    Always equals the Levenshtein distance between the two word lists (of ``language``); 0 iff
    the word lists are identical.
    """
    return sum(block.cost for block in _blocks(words(original, language),
                                               words(corrected, language)))


def char_similarity(original: str, corrected: str) -> float:
    """Return the normalised Indel similarity of the two normalised texts, in [0, 1].

    1.0 means identical after normalisation (two empty texts are identical); 0.0 means no
    character in common.
    """
    return fuzz.ratio(normalise_text(original), normalise_text(corrected)) / 100.0


def chars_changed(original: str, corrected: str) -> int:
    """Return the character Levenshtein distance between the two normalised texts."""
    return int(Levenshtein.distance(normalise_text(original), normalise_text(corrected)))


def near_total(similarity: float, cut: float = NEAR_TOTAL_CUT) -> bool:
    """Return True when a repair with this character similarity is near-total (below ``cut``)."""
    return similarity < cut


def length_change(original: str, corrected: str) -> float:
    """Return the relative change in characters, ``(|corrected| - |original|) / |original|``.

    Lengths are of the normalised texts. An empty original gives 0.0 when the correction is also
    empty and ``math.inf`` otherwise.
    """
    before = len(normalise_text(original))
    after = len(normalise_text(corrected))
    if before == 0:
        return 0.0 if after == 0 else math.inf
    return (after - before) / before


def repair_direction(change: float, band: float = LENGTH_BAND) -> Direction:
    """Classify a relative length change: beyond ``+band`` lengthened, below ``-band`` shortened.

    Changes inside the closed band ``[-band, +band]`` are 'same'; with ``band=0`` only an exactly
    equal length is 'same'. A negative band is refused.
    """
    if band < 0:
        raise ValueError(f"band must be >= 0, got {band}")
    if change > band:
        return "lengthened"
    if change < -band:
        return "shortened"
    return "same"


@dataclass(frozen=True)
class EditSize:
    """How much a correction changed a text, by every edit-size measure at once."""

    words_changed: int
    original_words: int
    corrected_words: int
    char_similarity: float
    chars_changed: int
    near_total: bool
    length_change: float
    direction: Direction


def edit_size(
    original: str,
    corrected: str,
    *,
    near_total_cut: float = NEAR_TOTAL_CUT,
    band: float = LENGTH_BAND,
    language: str = DEFAULT_LANGUAGE,
) -> EditSize:
    """Return every edit-size measure of ``corrected`` against ``original``.

    Each field equals what the function of the same name returns for these texts (words in
    ``language``).
    """
    original_words = words(original, language)
    corrected_words = words(corrected, language)
    # Normalised once here rather than in each measure: paragraphs can be tens of kilobytes.
    before = normalise_text(original)
    after = normalise_text(corrected)
    similarity = fuzz.ratio(before, after) / 100.0
    if before:
        change = (len(after) - len(before)) / len(before)
    else:
        change = 0.0 if not after else math.inf
    return EditSize(
        words_changed=sum(block.cost for block in _blocks(original_words, corrected_words)),
        original_words=len(original_words),
        corrected_words=len(corrected_words),
        char_similarity=similarity,
        chars_changed=int(Levenshtein.distance(before, after)),
        near_total=near_total(similarity, near_total_cut),
        length_change=change,
        direction=repair_direction(change, band),
    )


@dataclass(frozen=True)
class EditSizing:
    """A study's edit-size settings: its caption language (what a word is), near-total cut and
    length band. :meth:`measure` is how every edit size of a study is computed, so that no
    caller can forget the language (Chinese and Japanese words are not whitespace runs)."""

    language: str = DEFAULT_LANGUAGE
    near_total_cut: float = NEAR_TOTAL_CUT
    length_band: float = LENGTH_BAND

    @classmethod
    def of(cls, study: Any) -> EditSizing:
        """The settings of a study (anything with ``caption_language``, ``near_total_cut`` and
        ``length_band``)."""
        return cls(language=str(study.caption_language),
                   near_total_cut=float(study.near_total_cut),
                   length_band=float(study.length_band))

    def measure(self, original: str, corrected: str) -> EditSize:
        """Every edit-size measure of ``corrected`` against ``original`` under these settings."""
        return edit_size(original, corrected, near_total_cut=self.near_total_cut,
                         band=self.length_band, language=self.language)


@dataclass(frozen=True)
class DiffSegment:
    """A run of words in a redline: kept ('equal'), added ('insert') or removed ('delete')."""

    op: DiffOp
    text: str


def word_diff(
    original: str, corrected: str, *, language: str = DEFAULT_LANGUAGE
) -> list[DiffSegment]:
    """Return the word-level redline that turns ``original`` into ``corrected``.

    Promises:
    - words are aligned exactly as in :func:`words_changed`; each merged non-equal block becomes
      one 'delete' segment followed by one 'insert' segment (a replacement is delete + insert),
      so ``words_changed`` equals the sum over blocks of the longer side's word count;
    - segments carry the whitespace that precedes their words (kept words show the corrected
      text's spacing, so line breaks survive), the first segment starts without whitespace, and
      in spaced languages adjacent segments never glue two words together (in Chinese and
      Japanese, words written together stay together);
    - joining the 'equal' and 'delete' texts gives the original, and joining the 'equal' and
      'insert' texts gives the corrected text, up to whitespace runs;
    - adjacent segments never share an op.
    """
    src = segment.spaced_words(original, language)
    dst = segment.spaced_words(corrected, language)
    segments: list[DiffSegment] = []
    emitted = False
    joiner = "" if language in segment.SEGMENTED else " "

    def render(pieces: Sequence[tuple[str, str]]) -> str:
        # Why the separator logic: the first word of either side carries no whitespace, but once
        # anything has been emitted a word must be separated from what precedes it.
        nonlocal emitted
        parts: list[str] = []
        for space, word in pieces:
            if emitted:
                parts.append(space or joiner)
            parts.append(word)
            emitted = True
        return "".join(parts)

    def add(op: DiffOp, pieces: Sequence[tuple[str, str]]) -> None:
        if not pieces:
            return
        text = render(pieces)
        if segments and segments[-1].op == op:
            segments[-1] = DiffSegment(op, segments[-1].text + text)
        else:
            segments.append(DiffSegment(op, text))

    for block in _blocks([w for _, w in src], [w for _, w in dst]):
        if block.equal:
            add("equal", dst[block.dst_start : block.dst_end])
        else:
            add("delete", src[block.src_start : block.src_end])
            add("insert", dst[block.dst_start : block.dst_end])
    return segments
