"""Words of a caption, by the study's caption language.

What a *word* is, per language (``Study.caption_language``):

- ``en`` (the default) and ``other``: a maximal run of non-whitespace characters of the
  Unicode-NFC normalised text (Python's Unicode-aware ``str.split``). Punctuation stays on its
  word ("dog." is one word), so a fixed comma is a changed word.
- ``zh``: each whitespace-separated run is cut into words by jieba-rs (the ``rjieba`` package,
  its dictionary compiled into the wheel), with its HMM for words not in the dictionary.
- ``ja``: each run is cut into UniDic short-unit words (短単位, the unit the NINJAL corpora
  count words in) by MeCab (the ``fugashi`` package, with the ``unidic-lite`` dictionary shipped
  inside its PyPI package).

In both segmented languages a token made only of punctuation or symbols joins the word before it
in the same run (or, at the start of a run, the word after it), as it does in a spaced language:
"骑自行车。" is two words, "骑" and "自行车。". Nothing is downloaded at run time.

Why these segmenters: both ship their dictionary inside the PyPI package and run in compiled code
(a paragraph in well under a millisecond after a one-off load), and short-unit words keep the
paper's word thresholds (3/6/16 words) meaningful: a full rewrite of a Chinese or Japanese
sentence changes about as many words as its English translation has.
"""

from __future__ import annotations

import importlib.metadata
import re
import threading
import unicodedata
from collections.abc import Callable
from typing import Any, Literal

Language = Literal["en", "zh", "ja", "other"]
LANGUAGES: tuple[str, ...] = ("en", "zh", "ja", "other")
#: Languages whose words come from a segmenter rather than from whitespace.
SEGMENTED: frozenset[str] = frozenset({"zh", "ja"})
DEFAULT_LANGUAGE = "en"

# A word together with the whitespace that precedes it, so that a redline keeps line breaks.
_SPACED_WORD = re.compile(r"(\s*)(\S+)")


class UnknownLanguage(ValueError):
    """A caption language Redline does not know."""


def check_language(language: str) -> str:
    """Return ``language`` if known, else raise :class:`UnknownLanguage` naming the choices."""
    if language not in LANGUAGES:
        raise UnknownLanguage(
            f"unknown caption language {language!r}: choose one of {', '.join(LANGUAGES)}"
        )
    return language


_local = threading.local()


def _japanese_tagger() -> Any:
    # One MeCab tagger per thread: a tagger keeps state between calls.
    tagger = getattr(_local, "tagger", None)
    if tagger is None:
        import fugashi  # type: ignore[import-not-found, unused-ignore]
        import unidic_lite  # type: ignore[import-not-found, unused-ignore]

        dicdir = unidic_lite.DICDIR
        # The dictionary's own mecabrc, so that no system-wide MeCab configuration is needed.
        tagger = fugashi.GenericTagger(f'-d "{dicdir}" -r "{dicdir}/mecabrc"')
        _local.tagger = tagger
    return tagger


def _cut_chinese(run: str) -> list[str]:
    import rjieba  # type: ignore[import-not-found, unused-ignore]

    return [token for token in rjieba.cut(run) if not token.isspace()]


def _cut_japanese(run: str) -> list[str]:
    return [str(node.surface) for node in _japanese_tagger()(run)]


_CUTTERS: dict[str, Callable[[str], list[str]]] = {"zh": _cut_chinese, "ja": _cut_japanese}


def _is_punctuation(token: str) -> bool:
    return all(unicodedata.category(ch)[0] in "PS" for ch in token)


def _glue_punctuation(tokens: list[str]) -> list[str]:
    """Join punctuation-only tokens to the word before them (at the start: the word after)."""
    out: list[str] = []
    pending = ""
    for token in tokens:
        if _is_punctuation(token):
            if out:
                out[-1] += token
            else:
                pending += token
            continue
        out.append(pending + token)
        pending = ""
    if pending:
        out.append(pending)
    return out


def _cut_run(run: str, language: str) -> list[str]:
    """The words of one whitespace-free run; their concatenation is ``run``."""
    tokens = [token for token in _CUTTERS[language](run) if token]
    if "".join(tokens) != run:
        # A segmenter that drops or alters characters would make the redline lie: keep the run whole.
        return [run]
    return _glue_punctuation(tokens)


def spaced_words(text: str, language: str = DEFAULT_LANGUAGE) -> list[tuple[str, str]]:
    """Return (preceding whitespace, word) pairs of the NFC-normalised ``text``.

    Words inside one whitespace-free run of a segmented language have "" before them; joining
    every pair gives the NFC text without its trailing whitespace.
    """
    check_language(language)
    found = _SPACED_WORD.findall(unicodedata.normalize("NFC", text))
    if language not in SEGMENTED:
        return found
    pairs: list[tuple[str, str]] = []
    for space, run in found:
        pieces = _cut_run(run, language)
        pairs.append((space, pieces[0]))
        pairs.extend(("", piece) for piece in pieces[1:])
    return pairs


def words(text: str, language: str = DEFAULT_LANGUAGE) -> list[str]:
    """Return the words of ``text`` in ``language`` (see the module docstring)."""
    if language not in SEGMENTED:
        check_language(language)
        return unicodedata.normalize("NFC", text).split()
    return [word for _, word in spaced_words(text, language)]


def _version_of(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "missing"


def segmenter(language: str = DEFAULT_LANGUAGE) -> str:
    """Name and version of what cuts ``language`` into words (``whitespace`` for spaced ones)."""
    check_language(language)
    if language == "zh":
        return f"rjieba-{_version_of('rjieba')}"
    if language == "ja":
        return f"fugashi-{_version_of('fugashi')}+unidic-lite-{_version_of('unidic-lite')}"
    return "whitespace"
