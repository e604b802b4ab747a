"""The browser's edits.js gives the same numbers and the same redline as scoring.metrics.edits.

Pairs (over 10,000): word edits of real captions and references from the public datasets, their
model-versus-reference near-total rewrites (up to thousands of words), and generated texts with
accents in both normal forms, combining marks, CJK, emoji outside the BMP, right-to-left script,
every whitespace Python knows (and U+FEFF, which JavaScript's \\s would wrongly take for one),
punctuation and case changes. Both implementations run on the same pairs; node runs the module.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import subprocess
import sys
import unicodedata

import pytest

from scoring.metrics import edits
from tests.conftest import REPO, SHARED_DATASETS

RUNNER = REPO / "tests" / "frontend" / "js" / "edits_runner.mjs"
CLIP_CC = SHARED_DATASETS / "clip-cc-bench" / "data"
FM_V2T = SHARED_DATASETS / "fm-v2t" / "annotations"

# Characters assigned in the Unicode version Python knows, so that NFC cannot differ only
# because the browser knows newer characters.
ALPHABET = (
    list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    + list(".,;:!?'\"()[]-–—…«»“”‘’/&%$#@*")
    + ["é", "e\u0301", "ñ", "n\u0303", "Å", "A\u030a", "ß", "ﬁ", "Ω", "Ω", "ǅ"]
    + ["\u0327", "\u0323\u0307"]
    + list("日本語の字幕動画猫犬") + list("مرحبا") + list("שלום") + list("ĐđŁłØø")
    + ["😀", "👩\u200d👩\u200d👧", "🇦🇹", "𝔸", "𠀋"]
)
SPACES = [" ", " ", " ", "  ", "\n", "\t", "\r\n", "\u00a0", "\u3000", "\u2009", "\x1c", "\x85"]
SPACES += ["\u2028", "\ufeff"]
VOCABULARY = "the a man woman dog walks runs into room camera pans left right slowly red".split()


def random_word(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return rng.choice(VOCABULARY) + rng.choice(["", "", "", ".", ",", "!"])
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 7)))


def random_text(rng: random.Random, n_words: int) -> str:
    lead = rng.choice(["", "", " ", "\n"])
    return lead + "".join(random_word(rng) + rng.choice(SPACES) for _ in range(n_words)).rstrip(
        rng.choice([" ", "", "\n"])
    )


def edited(rng: random.Random, text: str, n_edits: int) -> str:
    """Apply word-level edits (replace, insert, delete, case, punctuation, re-spacing)."""
    tokens = text.split(" ")
    for _ in range(n_edits):
        kind = rng.randrange(6)
        at = rng.randrange(len(tokens) + 1)
        if kind == 0 and at < len(tokens):
            tokens[at] = random_word(rng)
        elif kind == 1:
            tokens.insert(at, random_word(rng))
        elif kind == 2 and at < len(tokens):
            del tokens[at]
        elif kind == 3 and at < len(tokens):
            tokens[at] = tokens[at].capitalize() if rng.random() < 0.5 else tokens[at].lower()
        elif kind == 4 and at < len(tokens):
            tokens[at] = tokens[at] + rng.choice([",", ".", "!", "…"])
        elif at < len(tokens):
            tokens[at] = tokens[at] + rng.choice(["\n", "  ", "\t"])
    return " ".join(tokens)


def dataset_texts() -> list[str]:
    texts: list[str] = []
    references = json.loads((CLIP_CC / "ground_truth" / "clip_cc_dataset.json").read_text())
    texts += [item["summary"] for item in references]
    for path in sorted((CLIP_CC / "models").glob("*.json"))[:6]:
        texts += list(json.loads(path.read_text()).values())
    import csv

    with open(FM_V2T / "clips-wvr-annotations-eng.csv", newline="", encoding="utf-8") as handle:
        for row in csv.reader(handle):
            texts += [cell for cell in row if len(cell.split()) >= 5]
    return texts


def dataset_pairs(rng: random.Random) -> list[tuple[str, str]]:
    """Real texts: model output against the expert reference (near-total rewrites, up to
    thousands of words), and real texts with a few or many word edits."""
    references = {
        item["id"]: item["summary"]
        for item in json.loads((CLIP_CC / "ground_truth" / "clip_cc_dataset.json").read_text())
    }
    pairs: list[tuple[str, str]] = []
    for path in sorted((CLIP_CC / "models").glob("*.json"))[:3]:
        outputs = json.loads(path.read_text())
        for key in sorted(outputs)[:60]:
            if key in references:
                pairs.append((outputs[key], references[key]))
    texts = dataset_texts()
    for _ in range(3000):
        text = rng.choice(texts)
        n = len(text.split())
        n_edits = rng.choice([1, 2, 3, max(1, n // 20), max(1, n // 3)])
        pairs.append((text, edited(rng, text, n_edits)))
    return pairs


def generated_pairs(rng: random.Random) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = [
        ("", ""), ("", "a"), ("a", ""), (" \n\t", ""), ("\ufeff", ""), ("a\ufeffb", "a b"),
        ("café", "cafe\u0301"), ("Dog", "dog."), ("x\x1cy", "x y"), ("a\x85b", "a b"),
    ]
    for _ in range(5200):
        text = random_text(rng, rng.choice([1, 2, 5, 12, 30, 80]))
        pairs.append((text, edited(rng, text, rng.randint(0, 6))))
    for _ in range(1500):  # near-total rewrites and unrelated texts
        pairs.append((random_text(rng, rng.randint(0, 40)), random_text(rng, rng.randint(0, 40))))
    for _ in range(300):  # long texts: past one 32-bit block and many blocks
        n = rng.choice([33, 64, 65, 200, 700, 2000])
        text = random_text(rng, n)
        pairs.append((text, edited(rng, text, rng.choice([1, 10, n // 4, n]))))
    for n in (2000, 2500, 3000):  # long near-total rewrites
        pairs.append((random_text(rng, n), random_text(rng, n)))
    return pairs


def typing_sessions(rng: random.Random) -> list[tuple[str, list[str]]]:
    """Someone typing into a long text: a character at a time at a cursor that moves now and
    then, with deletions and pastes, so that the live size reuses work between keystrokes."""
    sessions = []
    for n_words in (40, 300, 2000):
        for _ in range(3):
            original = random_text(rng, n_words)
            text = edited(rng, original, n_words // 10)
            cursor = rng.randrange(len(text) + 1)
            texts = []
            for _ in range(60):
                roll = rng.random()
                if roll < 0.1:
                    cursor = rng.randrange(len(text) + 1)
                if roll < 0.7:
                    text = text[:cursor] + rng.choice(ALPHABET + [" "]) + text[cursor:]
                    cursor += 1
                elif roll < 0.9 and cursor:
                    text = text[: cursor - 1] + text[cursor:]
                    cursor -= 1
                else:
                    text = text[:cursor] + random_text(rng, 5) + text[cursor:]
                texts.append(text)
            sessions.append((original, texts))
    return sessions


def run_javascript(pairs: list[tuple[str, str]], sessions=()) -> list:
    node = shutil.which("node")
    assert node, "Node.js is needed for the browser-code tests (install the Debian package nodejs)"
    payload = json.dumps({"pairs": pairs, "sessions": list(sessions)})
    done = subprocess.run(
        [node, str(RUNNER)], input=payload, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr
    # split on "\n" only: texts may hold U+2028 or U+0085, which str.splitlines also splits on
    return [json.loads(line) for line in done.stdout.rstrip("\n").split("\n")]


def python_side(original: str, corrected: str) -> dict:
    size = edits.edit_size(original, corrected)
    fields = dict(size.__dict__)
    if not math.isfinite(fields["length_change"]):
        fields["length_change"] = "Infinity"
    return {
        "size": fields,
        "diff": [{"op": s.op, "text": s.text} for s in edits.word_diff(original, corrected)],
        "live": live_side(original, corrected),
    }


def live_side(original: str, corrected: str) -> dict:
    size = edits.edit_size(original, corrected)
    return {
        "words_changed": size.words_changed,
        "char_similarity": size.char_similarity,
        "near_total": size.near_total,
        "diff": [{"op": s.op, "text": s.text} for s in edits.word_diff(original, corrected)],
    }


@pytest.fixture(scope="module")
def pairs() -> list[tuple[str, str]]:
    rng = random.Random(20261201)
    found = generated_pairs(rng)
    if not CLIP_CC.is_dir() or not FM_V2T.is_dir():
        pytest.fail(f"the public datasets are missing at {SHARED_DATASETS} (set REDLINE_DATASETS)")
    found += dataset_pairs(rng)
    return found


def test_pairs_cover_what_the_parity_claims(pairs):
    assert len(pairs) >= 10_000
    assert max(len(a.split()) for a, _ in pairs) >= 2000
    assert any(edits.char_similarity(a, b) < edits.NEAR_TOTAL_CUT for a, b in pairs)
    assert any(unicodedata.normalize("NFC", a) != a for a, _ in pairs)
    assert any(any(ord(ch) > 0xFFFF for ch in a) for a, _ in pairs)


def test_javascript_gives_the_same_numbers_and_redline_as_python(pairs):
    javascript = run_javascript(pairs)
    assert len(javascript) == len(pairs)
    mismatches = []
    for (original, corrected), js in zip(pairs, javascript, strict=True):
        expected = python_side(original, corrected)
        if js != expected:
            mismatches.append((original[:80], corrected[:80], expected["size"], js["size"]))
    assert not mismatches, f"{len(mismatches)} of {len(pairs)} pairs differ; first: {mismatches[0]}"


def test_live_size_while_typing_matches_python_at_every_keystroke():
    sessions = typing_sessions(random.Random(7))
    javascript = run_javascript([], sessions)
    assert len(javascript) == len(sessions)
    for (original, texts), steps in zip(sessions, javascript, strict=True):
        for keystroke, (text, js) in enumerate(zip(texts, steps, strict=True)):
            where = f"keystroke {keystroke} into a {len(original)}-character text"
            assert js == live_side(original, text), where


# Chinese and Japanese pairs: unspaced, spaced, mixed with Latin script, full rewrites.
CJK_PAIRS = [
    ("一个男人在骑自行车", "一个女人在骑红色自行车"),
    ("一个男人在骑自行车", "一位老太太正推着婴儿车过马路"),
    ("一个男人在骑自行车", "一个 男人 在 骑 自行车"),
    ("男の人が自転車に乗っている。", "女の人が赤い自転車に乗っている。"),
    ("男の人が自転車に乗っている。", "二匹の犬が公園で走り回っている。"),
    ("镜头缓慢地向左平移，一个女人走进房间。", "镜头向右平移。\n一个女人走出房间。"),
    ("A man 骑 a bike。", "A woman 骑 a red bike。"),
    ("「カメラが　ゆっくり左にパンする。」", "「カメラが　素早く右にパンする。」"),
]


def test_cjk_pairs_match_in_the_languages_the_page_measures():
    """en and other: whitespace words, so the page's numbers are the server's, CJK text too."""
    javascript = run_javascript(CJK_PAIRS)
    for (original, corrected), js in zip(CJK_PAIRS, javascript, strict=True):
        assert js == python_side(original, corrected), original
        assert edits.edit_size(original, corrected, language="other") == edits.edit_size(
            original, corrected)


def test_chinese_and_japanese_words_differ_from_whitespace_words_so_the_page_asks_the_server():
    """Why live-edits.js sends zh and ja to /api/edit-size/: the segmenter runs only on the server,
    and its counts differ from what the page could count (tests/js/live-edits.test.js checks that
    the page shows the server's numbers for these languages and says so)."""
    javascript = run_javascript(CJK_PAIRS[:5])
    languages = ["zh", "zh", "zh", "ja", "ja"]
    for (original, corrected), language, js in zip(CJK_PAIRS, languages, javascript, strict=False):
        segmented = edits.words_changed(original, corrected, language=language)
        assert segmented != js["size"]["words_changed"], (original, corrected)
    measured = subprocess.run(
        [shutil.which("node"), "--input-type=module", "-e",
         "import { measuredInPage } from './frontend/static/frontend/live-edits.js';"
         "console.log(JSON.stringify(['en', 'other', 'zh', 'ja'].map(measuredInPage)));"],
        cwd=REPO, capture_output=True, text=True, check=True, timeout=60)
    assert json.loads(measured.stdout) == [True, True, False, False]


if __name__ == "__main__":  # pragma: no cover - a quick manual run
    sys.exit(pytest.main([__file__, "-q"]))
