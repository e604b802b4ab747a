"""The offline sentence splitter, one rule per row."""

from __future__ import annotations

import re

import pytest

from scoring.metrics.sentences import split_sentences

SPLIT_CASES = [
    # plain sentences
    ("A man walks. A dog barks.", ["A man walks.", "A dog barks."]),
    ("Who is it? Nobody knows! Then silence.", ["Who is it?", "Nobody knows!", "Then silence."]),
    # glued sentences, as in 137 CLIP-CC-Bench references
    ("He looks at him.The camera pans left.", ["He looks at him.", "The camera pans left."]),
    ("She runs away!She stops.", ["She runs away!", "She stops."]),
    ("He falls.A dog barks.", ["He falls.", "A dog barks."]),
    ('He says "stop."Then he leaves.', ['He says "stop."', "Then he leaves."]),
    # abbreviations and initials do not end a sentence
    ("Mr. Smith enters the room. He sits.", ["Mr. Smith enters the room.", "He sits."]),
    ("Dr. Jones and Mrs. Lee talk.", ["Dr. Jones and Mrs. Lee talk."]),
    ("They walk down St. Mark's square.", ["They walk down St. Mark's square."]),
    ("Mrs.Smith waves.", ["Mrs.Smith waves."]),
    ("A sign reads J. R. Miller. A man waits.", ["A sign reads J. R. Miller.", "A man waits."]),
    ("A U.S. Army truck passes.", ["A U.S. Army truck passes."]),
    ("Fruit, e.g. apples, lies there.", ["Fruit, e.g. apples, lies there."]),
    ("Er sieht z.B. Bäume. Dann geht er.", ["Er sieht z.B. Bäume.", "Dann geht er."]),
    # decimals, numbers and lowercase continuations
    ("The sign shows 3.5 km. It is raining.", ["The sign shows 3.5 km.", "It is raining."]),
    ("It weighs approx. 5 kg.", ["It weighs approx. 5 kg."]),
    ("He waits... and then leaves.", ["He waits... and then leaves."]),
    ("He waits... Then he leaves.", ["He waits...", "Then he leaves."]),
    ("Visit example.com today.", ["Visit example.com today."]),
    ("He was born in 1990. The war began.", ["He was born in 1990.", "The war began."]),
    # stripping, empties, line breaks and list markers
    ("  A man walks.   ", ["A man walks."]),
    ("", []),
    ("   \n\n  ", []),
    ("... ** -", []),
    ("A man walks.\n\nA dog barks", ["A man walks.", "A dog barks"]),
    ("Scene one\nA man walks.", ["Scene one", "A man walks."]),
    ("1. A man walks.\n2. A dog barks.", ["1. A man walks.", "2. A dog barks."]),
    ("He opens it. 2. He leaves.", ["He opens it.", "2. He leaves."]),
    ("A man walks. ... A dog barks.", ["A man walks.", "A dog barks."]),
]


@pytest.mark.parametrize(("text", "expected"), SPLIT_CASES)
def test_split_sentences_follows_the_documented_rules(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


@pytest.mark.parametrize(("text", "_"), SPLIT_CASES)
def test_split_sentences_keeps_every_word_character_in_order(text: str, _: list[str]) -> None:
    def word_chars(value: str) -> str:
        return re.sub(r"\W", "", value)

    assert word_chars("".join(split_sentences(text))) == word_chars(text)


def test_split_sentences_handles_a_long_repetition_loop_quickly() -> None:
    text = "The man looks at the woman. " * 5000
    sentences = split_sentences(text)
    assert len(sentences) == 5000
    assert set(sentences) == {"The man looks at the woman."}


PUNKT_CASES = [
    # NLTK's Punkt (English), as CLIP-CC-Bench splits: abbreviations and initialisms learned.
    ("Mr. Smith enters the room. He sits.", ["Mr. Smith enters the room.", "He sits."]),
    ("A U.S. Army truck passes. It stops.", ["A U.S. Army truck passes.", "It stops."]),
    ("The sign shows 3.5 km. It is raining.", ["The sign shows 3.5 km.", "It is raining."]),
    # Where it differs from ours: glued sentences stay together...
    ("He looks at him.The camera pans left.", ["He looks at him.The camera pans left."]),
    # ... and so does an ellipsis before a capital.
    ("He waits... Then he leaves.", ["He waits... Then he leaves."]),
    # Stripped, empties dropped.
    ("  A man walks.   ", ["A man walks."]),
    ("   ", []),
]


@pytest.mark.parametrize(("text", "expected"), PUNKT_CASES)
def test_punkt_splits_as_nltks_english_model(text: str, expected: list[str]) -> None:
    from scoring.metrics.sentences import punkt_sentences

    assert punkt_sentences(text) == expected


def test_punkt_is_the_default_splitter_and_redline_is_ours() -> None:
    from scoring.metrics.sentences import DEFAULT_SPLITTER, sentences

    text = "He looks at him.The camera pans left."
    assert DEFAULT_SPLITTER == "punkt"
    assert sentences(text) == [text]
    assert sentences(text, "redline") == split_sentences(text)


def test_an_unknown_splitter_is_refused_naming_the_choices() -> None:
    from scoring.metrics.sentences import sentences

    with pytest.raises(ValueError, match="unknown sentence splitter 'spacy'; choose from punkt"):
        sentences("A man walks.", "spacy")


def test_a_text_split_again_is_not_split_again(monkeypatch):
    from scoring.metrics import sentences as module

    calls: list[str] = []

    def counting(text: str) -> list[str]:
        calls.append(text)
        return text.split(". ")

    monkeypatch.setitem(module.SPLITTERS, "counting", counting)
    first = module.sentences("One. Two", "counting")
    first.append("changed by the caller")
    assert module.sentences("One. Two", "counting") == ["One", "Two"]
    assert calls == ["One. Two"]
