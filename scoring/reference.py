"""Reference-overlap metrics (BLEU-1..4, METEOR, ROUGE-L, CIDEr-D) from the COCO caption toolkit.

Values are those of PyPI ``pycocoevalcap`` 1.2, the toolkit behind the FM-V2T paper's numbers:
Stanford PTB tokenisation (lowercased, punctuation tokens dropped, "susi-leo" kept whole),
``Bleu(4)``, ``Meteor()`` (METEOR 1.5), ``Rouge()`` (ROUGE-L, beta 1.2) and ``Cider()``
(CIDEr-D: clipped n-gram counts and a Gaussian length penalty, sigma 6).

Batched on purpose: the PTB tokeniser and METEOR each start a Java VM, so one call to
:func:`reference_scores` tokenises the whole corpus in one JVM run and scores METEOR in one
more, whatever the corpus size.

Per-item versus corpus values:

- **CIDEr is corpus-relative.** Its idf weights come from the reference sets scored together, so a
  per-item value is only meaningful as part of the run it came from; an item scored alone gets 0
  (every n-gram then occurs in all, i.e. one, reference sets, so its idf is 0). Always score a
  whole corpus in one call and store the per-item values of that run.
- BLEU's corpus value is corpus-level BLEU (n-gram counts pooled over items, one brevity penalty),
  not the mean of per-item BLEU; METEOR's corpus value pools METEOR's statistics likewise.
  ROUGE-L's and CIDEr's corpus values are the means of the per-item values.

The tokeniser is called the way pycocoevalcap calls it (same jar, same options, same dropped
punctuation), but reads standard input instead of writing a temporary file into the installed
package, collapses every kind of line break first (a carriage return inside a caption would
otherwise shift every later caption onto the wrong line) and keeps the JVM's log off the console.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

REFERENCE_METRICS: tuple[str, ...] = (
    "bleu1",
    "bleu2",
    "bleu3",
    "bleu4",
    "meteor",
    "rouge_l",
    "cider",
)

_BLEU = ("bleu1", "bleu2", "bleu3", "bleu4")


class ReferenceMetricError(RuntimeError):
    """The Java toolkit could not be run or answered something unexpected."""


@dataclass(frozen=True)
class ReferenceScores:
    """Scores of one corpus run: ``per_item[id][metric]`` and ``corpus[metric]``."""

    per_item: dict[str, dict[str, float]]
    corpus: dict[str, float]


def _java() -> str:
    """Return the java executable, or fail with a message that says what is missing."""
    java = shutil.which("java")
    if java is None:
        raise ReferenceMetricError("METEOR and PTB tokenisation need Java (java not on PATH)")
    return java


def ptb_tokenize(texts: Sequence[str]) -> list[str]:
    """Return each text PTB-tokenised exactly as pycocoevalcap 1.2 does, in one JVM run.

    Each result is lowercased tokens joined by single spaces, without the tokens on
    pycocoevalcap's punctuation list (".", ",", "?", "''", "-lrb-" is *not* on it since the list is
    upper case, and neither is "?!": the toolkit keeps them, so we do); an empty text gives "".
    """
    if not texts:
        return []
    # Imported here: pycocoevalcap is only needed when reference metrics are actually computed.
    from pycocoevalcap.tokenizer import ptbtokenizer

    jar_dir = Path(ptbtokenizer.__file__).resolve().parent
    # str.split() breaks on every Unicode line separator, so one text stays one line.
    lines = "\n".join(" ".join(text.split()) for text in texts) + "\n"
    command = [
        _java(),
        "-cp",
        str(jar_dir / ptbtokenizer.STANFORD_CORENLP_3_4_1_JAR),
        "edu.stanford.nlp.process.PTBTokenizer",
        "-preserveLines",
        "-lowerCase",
        "-encoding",
        "UTF-8",
    ]
    result = subprocess.run(
        command, input=lines.encode("utf-8"), capture_output=True, check=False
    )
    if result.returncode != 0:
        raise ReferenceMetricError(
            f"PTB tokenizer failed ({result.returncode}): {result.stderr.decode()[-2000:]}"
        )
    output = result.stdout.decode("utf-8").split("\n")
    if len(output) < len(texts) or any(line.strip() for line in output[len(texts) :]):
        raise ReferenceMetricError(
            f"PTB tokenizer returned {len(output)} lines for {len(texts)} texts"
        )
    drop = set(ptbtokenizer.PUNCTUATIONS)
    return [
        " ".join(token for token in line.rstrip().split(" ") if token and token not in drop)
        for line in output[: len(texts)]
    ]


def _meteor(
    gts: Mapping[str, list[str]], res: Mapping[str, list[str]]
) -> tuple[float, list[float]]:
    """Score METEOR for all items in one JVM, and always stop that JVM."""
    from pycocoevalcap.meteor.meteor import Meteor

    _java()
    meteor = Meteor()
    try:
        score, scores = meteor.compute_score(gts, res)
    finally:
        # Why: Meteor only stops its JVM in __del__, whose timing is up to the garbage collector.
        meteor.meteor_p.stdin.close()
        meteor.meteor_p.kill()
        meteor.meteor_p.wait()
    return float(score), [float(value) for value in scores]


def reference_scores(
    candidates: Mapping[str, str],
    references: Mapping[str, Sequence[str]],
    *,
    metrics: Sequence[str] = REFERENCE_METRICS,
) -> ReferenceScores:
    """Score every candidate against its references in one corpus run.

    ``candidates`` maps an item id to its candidate text and ``references`` maps the same ids to
    one or more reference texts. Returns ``per_item[id][metric]`` for every id (in the order of
    ``candidates``) and ``corpus[metric]`` for each requested metric in :data:`REFERENCE_METRICS`.
    Refuses unknown metrics, ids without references and items with no reference at all.
    """
    unknown = [name for name in metrics if name not in REFERENCE_METRICS]
    if unknown:
        raise ValueError(f"unknown reference metrics: {unknown}")
    missing = [key for key in candidates if not references.get(key)]
    if missing:
        raise ValueError(f"items without references: {missing[:10]}")
    ids = list(candidates)
    if not ids or not metrics:
        return ReferenceScores(per_item={key: {} for key in ids}, corpus={})

    # One tokeniser run for every candidate and reference text of the corpus.
    flat: list[str] = [candidates[key] for key in ids]
    for key in ids:
        flat.extend(references[key])
    tokens = ptb_tokenize(flat)
    res: dict[str, list[str]] = {}
    gts: dict[str, list[str]] = {}
    position = len(ids)
    for index, key in enumerate(ids):
        res[key] = [tokens[index]]
        count = len(references[key])
        gts[key] = tokens[position : position + count]
        position += count

    per_item: dict[str, dict[str, float]] = {key: {} for key in ids}
    corpus: dict[str, float] = {}

    def store(name: str, total: float, values: Sequence[float]) -> None:
        if name in metrics:
            corpus[name] = float(total)
            for key, value in zip(ids, values, strict=True):
                per_item[key][name] = float(value)

    if any(name in metrics for name in _BLEU):
        from pycocoevalcap.bleu.bleu import Bleu

        totals, values = Bleu(4).compute_score(gts, res, verbose=0)
        for n, name in enumerate(_BLEU):
            store(name, totals[n], values[n])
    if "meteor" in metrics:
        store("meteor", *_meteor(gts, res))
    if "rouge_l" in metrics:
        from pycocoevalcap.rouge.rouge import Rouge

        total, values = Rouge().compute_score(gts, res)
        store("rouge_l", total, list(values))
    if "cider" in metrics:
        from pycocoevalcap.cider.cider import Cider

        total, values = Cider().compute_score(gts, res)
        store("cider", total, list(values))

    ordered = {name: corpus[name] for name in REFERENCE_METRICS if name in corpus}
    return ReferenceScores(per_item=per_item, corpus=ordered)


def java_available() -> bool:
    """Return True when a ``java`` executable is on PATH (METEOR and tokenisation need it)."""
    return shutil.which("java") is not None
