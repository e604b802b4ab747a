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
- Since idf depends only on the reference sets, pooling the outputs of several systems that
  cover the same clips gives each item the same CIDEr as scoring each system's outputs alone.
- BLEU's corpus value is corpus-level BLEU (n-gram counts pooled over items, one brevity penalty),
  not the mean of per-item BLEU; METEOR's corpus value pools METEOR's statistics likewise.
  ROUGE-L's and CIDEr's corpus values are the means of the per-item values.

Two parts are re-implemented for speed, value for value (tests compare them with the toolkit's
own classes): ROUGE-L computes the same longest common subsequence of the same tokens with
rapidfuzz instead of a pure-Python dynamic programme (hundreds of times faster on paragraphs),
and METEOR sends ``SCORE`` and ``EVAL`` lines to the same jar, but scores each distinct
(hypothesis, reference) pair once and picks each item's best reference as METEOR does (see
:func:`_meteor`), spreads the ``SCORE`` lines over several JVMs by their length (METEOR's
statistics are plain counts, so one JVM can ``EVAL`` statistics another computed), can keep the
pairs' statistics in a cache shared by processes, and keeps the JVM's stderr from filling a
pipe.

The tokeniser is called the way pycocoevalcap calls it (same jar, same options, same dropped
punctuation), but reads standard input instead of writing a temporary file into the installed
package, collapses every kind of line break first (a carriage return inside a caption would
otherwise shift every later caption onto the wrong line) and keeps the JVM's log off the console.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import subprocess
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from scoring.metrics.shared_cache import MemoryCache, SharedCache, text_key

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


ROUGE_BETA = 1.2


def rouge_l(candidate: str, references: Sequence[str], beta: float = ROUGE_BETA) -> float:
    """Return pycocoevalcap's ROUGE-L of PTB-tokenised texts, computed with rapidfuzz.

    Same tokens (split on single spaces, as the toolkit does), same LCS length, same arithmetic:
    the best precision and the best recall over the references, combined as an F-measure
    weighted by ``beta``; 0.0 when either is 0.
    """
    from rapidfuzz.distance import LCSseq

    tokens = candidate.split(" ")
    precisions: list[float] = []
    recalls: list[float] = []
    for reference in references:
        reference_tokens = reference.split(" ")
        lcs = LCSseq.similarity(reference_tokens, tokens)
        precisions.append(lcs / float(len(tokens)))
        recalls.append(lcs / float(len(reference_tokens)))
    precision, recall = max(precisions), max(recalls)
    if precision == 0 or recall == 0:
        return 0.0
    return ((1 + beta**2) * precision * recall) / float(recall + beta**2 * precision)


#: How METEOR's JVMs run: pycocoevalcap gives ``-Xmx2G``. Aligning a long paragraph (a caption
#: stuck in a repetition loop runs to 4,000 words) allocates short-lived objects by the million,
#: so a large young generation collected by the serial collector takes less than half the CPU
#: of the default collector in 2 GB, for the same output (on 24 CLIP-CC-Bench paragraphs, four
#: of them loops: 21 s of CPU against 48 s). Each JVM may then use about 3.3 GB of memory.
#: :func:`configure` changes them (the app passes ``METEOR_JAVA_OPTIONS``).
METEOR_JAVA_OPTIONS: tuple[str, ...] = ("-Xmx3G", "-Xmn2G", "-XX:+UseSerialGC")
_java_options: tuple[str, ...] = METEOR_JAVA_OPTIONS
_jvms: int | None = None


def configure(*, java_options: Sequence[str] = METEOR_JAVA_OPTIONS, jvms: int | None = None) -> None:
    """Set the Java options of METEOR JVMs started from now on (memory, garbage collector), and
    how many a call runs at once (None: :func:`default_meteor_workers` decides)."""
    global _java_options, _jvms
    _java_options = tuple(java_options)
    _jvms = jvms


class _MeteorJVM:
    """One METEOR 1.5 process in ``-stdio`` mode, started as pycocoevalcap starts it but with
    :data:`METEOR_JAVA_OPTIONS` (memory and collector only: the same output)."""

    def __init__(self) -> None:
        from pycocoevalcap.meteor import meteor

        self._process = subprocess.Popen(
            [_java(), *_java_options, "-jar", meteor.METEOR_JAR, "-", "-", "-stdio", "-l", "en",
             "-norm"],
            cwd=Path(meteor.__file__).resolve().parent,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            # Why not a pipe: nobody reads it, and a full stderr pipe would hang the JVM.
            stderr=subprocess.DEVNULL,
        )

    def _ask(self, line: str) -> str:
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(f"{line}\n".encode())
        self._process.stdin.flush()
        answer = self._process.stdout.readline().decode().strip()
        if not answer:
            raise ReferenceMetricError("METEOR stopped answering")
        return answer

    def statistics(self, hypothesis: str, references: Sequence[str]) -> str:
        """Return METEOR's statistics line for one item (pycocoevalcap's ``_stat``)."""
        return self._ask(_score_line(hypothesis, references))

    def statistics_many(self, items: Sequence[tuple[str, Sequence[str]]]) -> list[str]:
        """METEOR's statistics lines of many items, fed as one stream: a thread writes every
        ``SCORE`` line while this one reads the answers, so the JVM never waits for a round
        trip (and neither pipe fills up)."""
        import threading

        assert self._process.stdin is not None and self._process.stdout is not None
        stdin, stdout = self._process.stdin, self._process.stdout
        failure: list[BaseException] = []

        def write() -> None:
            try:
                for hypothesis, references in items:
                    stdin.write(f"{_score_line(hypothesis, references)}\n".encode())
                stdin.flush()
            except BaseException as error:  # noqa: BLE001 - reported by the reading thread
                failure.append(error)

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        answers = []
        for _ in items:
            answer = stdout.readline().decode().strip()
            if not answer:
                writer.join(timeout=5)
                raise ReferenceMetricError(
                    f"METEOR stopped answering{f': {failure[0]}' if failure else ''}")
            answers.append(answer)
        writer.join()
        return answers

    @property
    def alive(self) -> bool:
        return self._process.poll() is None

    def evaluate(self, statistics: Sequence[str]) -> tuple[float, list[float]]:
        """Return (corpus score, per-item scores) for statistics lines, in one EVAL."""
        first = self._ask("EVAL" + "".join(f" ||| {line}" for line in statistics))
        assert self._process.stdout is not None
        rest = [self._process.stdout.readline().decode().strip() for _ in statistics]
        values = [float(value) for value in [first, *rest]]
        return values[-1], values[:-1]

    def close(self) -> None:
        """Stop the JVM."""
        if self._process.stdin is not None:
            self._process.stdin.close()
        self._process.kill()
        self._process.wait()


def _clean_hypothesis(hypothesis: str) -> str:
    """The hypothesis as pycocoevalcap sends it to METEOR."""
    return hypothesis.replace("|||", "").replace("  ", " ")


def _score_line(hypothesis: str, references: Sequence[str]) -> str:
    return " ||| ".join(("SCORE", " ||| ".join(references), _clean_hypothesis(hypothesis)))


#: What METEOR's pair statistics are kept under in a shared cache: the jar and its options.
METEOR_NAMESPACE = "meteor-1.5 -l en -norm"


@dataclass(frozen=True)
class _PairStatistics:
    """METEOR's statistics line of one (hypothesis, reference) pair and the score they give."""

    line: str
    score: float

    def encode(self) -> bytes:
        return f"{self.score!r}\t{self.line}".encode()

    @classmethod
    def decode(cls, value: bytes) -> _PairStatistics:
        score, line = value.decode().split("\t", 1)
        return cls(line, float(score))


#: Pair statistics computed in this process (the most recent 200,000): a study's final
#: overviews meet the same captions in every leave-out set and chunk.
_PAIRS = MemoryCache(max_entries=200_000)


def forget_pairs() -> None:
    """Forget the pair statistics this process remembers (as a fresh worker has none)."""
    _PAIRS.clear()


def _pair_cost(pair: tuple[str, str]) -> int:
    """About how long METEOR aligns a pair: its alignment grows with both lengths."""
    return (pair[0].count(" ") + 1) * (pair[1].count(" ") + 1)


def _spread(pairs: Sequence[tuple[str, str]], shards: int) -> list[list[int]]:
    """Indices of ``pairs`` in ``shards`` parts of about equal cost (longest first, each to the
    least loaded part), so that no JVM is left working alone at the end."""
    parts: list[list[int]] = [[] for _ in range(shards)]
    loads = [0] * shards
    for index in sorted(range(len(pairs)), key=lambda i: -_pair_cost(pairs[i])):
        lightest = loads.index(min(loads))
        parts[lightest].append(index)
        loads[lightest] += _pair_cost(pairs[index])
    return [part for part in parts if part]


def _pair_statistics(
    pairs: Sequence[tuple[str, str]], workers: int, cache: SharedCache | None
) -> dict[tuple[str, str], _PairStatistics]:
    """Statistics of every (clean hypothesis, reference) pair: from this process's memory, then
    the shared cache, then METEOR for the rest (over up to ``workers`` JVMs, then one EVAL
    for their scores)."""
    from concurrent.futures import ThreadPoolExecutor

    keys = {pair: text_key(*pair) for pair in dict.fromkeys(pairs)}
    found: dict[tuple[str, str], _PairStatistics] = {}
    for store in (_PAIRS, cache):
        wanted = {key: pair for pair, key in keys.items() if pair not in found}
        if store is not None and wanted:
            for key, value in store.get_many(METEOR_NAMESPACE, list(wanted)).items():
                found[wanted[key]] = _PairStatistics.decode(value)
    missing = [pair for pair in keys if pair not in found]
    if missing:
        # Why at least 25 pairs per JVM: a JVM's share must outweigh the cost of handing it out.
        parts = _spread(missing, max(1, min(workers, len(missing) // 25)))
        with _jvm_lock:
            jvms = _pooled_jvms(len(parts))
            try:
                with ThreadPoolExecutor(max_workers=len(parts)) as pool:
                    answers = list(pool.map(
                        _statistics, jvms,
                        [[(missing[i][0], [missing[i][1]]) for i in part] for part in parts]))
                lines = [""] * len(missing)
                for part, answer in zip(parts, answers, strict=True):
                    for index, line in zip(part, answer, strict=True):
                        lines[index] = line
                _, scores = jvms[0].evaluate(lines)
            except BaseException:
                _discard_jvms()
                raise
        computed = {pair: _PairStatistics(line, score)
                    for pair, line, score in zip(missing, lines, scores, strict=True)}
        found.update(computed)
        if cache is not None:
            cache.put_many(METEOR_NAMESPACE,
                           {keys[pair]: kept.encode() for pair, kept in computed.items()})
    _PAIRS.put_many(METEOR_NAMESPACE, {keys[pair]: kept.encode() for pair, kept in found.items()})
    return found


def _statistics(jvm: _MeteorJVM, items: Sequence[tuple[str, Sequence[str]]]) -> list[str]:
    """METEOR statistics lines of ``items`` (hypothesis, references) from one JVM, in order."""
    return jvm.statistics_many(items)


#: METEOR JVMs kept running between calls (a worker scores chunk after chunk: starting a JVM
#: and loading its paraphrase table costs seconds each time). One call uses them at a time.
_jvm_pool: list[_MeteorJVM] = []
_jvm_lock = threading.Lock()


def _pooled_jvms(count: int) -> list[_MeteorJVM]:
    """``count`` live JVMs from the pool, started as needed (call with the lock held)."""
    _jvm_pool[:] = [jvm for jvm in _jvm_pool if jvm.alive]
    while len(_jvm_pool) < count:
        _jvm_pool.append(_MeteorJVM())
    return _jvm_pool[:count]


def _discard_jvms() -> None:
    """Stop every pooled JVM: one in an unknown state (half an answer read) is never reused."""
    for jvm in _jvm_pool:
        jvm.close()
    _jvm_pool.clear()


def start_meteor_jvms(count: int | None = None) -> None:
    """Start the JVMs a call will use (default :func:`default_meteor_workers`) and wait until
    each has loaded its tables, so that a worker's first chunk does not pay for it."""
    with _jvm_lock:
        for jvm in _pooled_jvms(count or default_meteor_workers()):
            jvm.statistics("a man", ["a man"])


def close_meteor_jvms() -> None:
    """Stop the JVMs kept for later calls."""
    with _jvm_lock:
        _discard_jvms()


atexit.register(close_meteor_jvms)


def _meteor(
    gts: Mapping[str, list[str]], res: Mapping[str, list[str]], workers: int,
    cache: SharedCache | None = None,
) -> tuple[float, list[float]]:
    """Score METEOR exactly as one ``SCORE`` line per item would, but each distinct
    (hypothesis, reference) pair once.

    METEOR 1.5 scores a hypothesis against each of its references on its own and keeps the
    statistics of the first reference with the highest score (``MeteorScorer.getMeteorStats``).
    So the statistics of the pairs, kept and shared, and their scores (one ``EVAL``; the
    statistics are printed to full precision, so ``EVAL`` recomputes the same score) make the
    same choice; one more ``EVAL`` of the chosen lines gives the per-item and corpus values.
    """
    items = [(res[key][0], _clean_hypothesis(res[key][0]), gts[key]) for key in gts]
    pairs = _pair_statistics(
        [(clean, reference) for _, clean, references in items for reference in references],
        workers, cache)
    chosen: list[str] = []
    for hypothesis, clean, references in items:
        best: _PairStatistics | None = None
        for reference in references:
            candidate = pairs[(clean, reference)]
            if candidate.score > (best.score if best is not None else -1.0):
                best = candidate
        if best is None:
            # No score above -1 (METEOR's empty statistics then): ask for the item as a whole.
            with _jvm_lock:
                chosen.append(_pooled_jvms(1)[0].statistics(hypothesis, references))
        else:
            chosen.append(best.line)
    with _jvm_lock:
        jvm = _pooled_jvms(1)[0]
        try:
            return jvm.evaluate(chosen)
        except BaseException:
            _discard_jvms()
            raise


def default_meteor_workers() -> int:
    """Return how many METEOR JVMs to run at once by default: as :func:`configure` said, else
    one per CPU, at most four."""
    if _jvms is not None:
        return max(1, _jvms)
    return max(1, min(4, os.cpu_count() or 1))


def reference_scores(
    candidates: Mapping[str, str],
    references: Mapping[str, Sequence[str]],
    *,
    metrics: Sequence[str] = REFERENCE_METRICS,
    meteor_workers: int | None = None,
    idf_documents: Sequence[Sequence[str]] | None = None,
    cache: SharedCache | None = None,
) -> ReferenceScores:
    """Score every candidate against its references in one corpus run.

    ``candidates`` maps an item id to its candidate text and ``references`` maps the same ids to
    one or more reference texts. Returns ``per_item[id][metric]`` for every id (in the order of
    ``candidates``) and ``corpus[metric]`` for each requested metric in :data:`REFERENCE_METRICS`.
    Refuses unknown metrics, ids without references and items with no reference at all.
    METEOR runs in up to ``meteor_workers`` JVMs at once (default
    :func:`default_meteor_workers`); the values do not depend on it.

    ``idf_documents``, when given, fixes CIDEr-D's idf: each document is a list of texts (one
    clip's captions, say) and an n-gram's document frequency is the number of documents in
    which it occurs, instead of the number of the scored reference sets. Scores of different
    runs that share the documents then use the same idf, whatever each run's reference sets.

    ``cache``, when given, keeps METEOR's statistics of each (hypothesis, reference) pair for
    every process that shares it (see :mod:`scoring.metrics.shared_cache`); values are the same
    with or without it.
    """
    import numpy as np  # here, not at the top: a web process imports this module without it

    unknown = [name for name in metrics if name not in REFERENCE_METRICS]
    if unknown:
        raise ValueError(f"unknown reference metrics: {unknown}")
    missing = [key for key in candidates if not references.get(key)]
    if missing:
        raise ValueError(f"items without references: {missing[:10]}")
    ids = list(candidates)
    if not ids or not metrics:
        return ReferenceScores(per_item={key: {} for key in ids}, corpus={})

    # One tokeniser run for the texts of the corpus not tokenised before; CIDEr-D's idf is
    # computed once per set of documents (a study's captions) and kept.
    flat: list[str] = [candidates[key] for key in ids]
    for key in ids:
        flat.extend(references[key])
    idf: CiderIdf | None = None
    if idf_documents is not None and "cider" in metrics:
        idf = cider_idf(idf_documents)
    tokens = ptb_tokenize_cached(flat)
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
        workers = meteor_workers if meteor_workers is not None else default_meteor_workers()
        store("meteor", *_meteor(gts, res, max(1, workers), cache))
    if "rouge_l" in metrics:
        rouge = [rouge_l(res[key][0], gts[key]) for key in ids]
        store("rouge_l", float(np.mean(np.array(rouge))), rouge)
    if "cider" in metrics and idf is not None:
        values = cider_d([res[key][0] for key in ids], [gts[key] for key in ids], idf=idf)
        store("cider", float(np.mean(values)), values)
    elif "cider" in metrics:
        from pycocoevalcap.cider.cider import Cider

        total, values = Cider().compute_score(gts, res)
        store("cider", total, list(values))

    ordered = {name: corpus[name] for name in REFERENCE_METRICS if name in corpus}
    return ReferenceScores(per_item=per_item, corpus=ordered)


_TOKENS: OrderedDict[str, str] = OrderedDict()
_TOKENS_MAX = 200_000
_tokens_lock = threading.Lock()


def ptb_tokenize_cached(texts: Sequence[str]) -> list[str]:
    """:func:`ptb_tokenize`, each distinct text once, remembering recent texts (LRU): a study's
    final overviews recur in many leave-out sets and chunks."""
    with _tokens_lock:
        missing = list(dict.fromkeys(text for text in texts if text not in _TOKENS))
    if missing:
        found = dict(zip(missing, ptb_tokenize(missing), strict=True))
        with _tokens_lock:
            _TOKENS.update(found)
            while len(_TOKENS) > _TOKENS_MAX:
                _TOKENS.popitem(last=False)
    else:
        found = {}
    with _tokens_lock:
        result = []
        for text in texts:
            if text in found:
                result.append(found[text])
            else:
                _TOKENS.move_to_end(text)
                result.append(_TOKENS[text])
    return result


@dataclass(frozen=True)
class CiderIdf:
    """CIDEr-D's document frequencies over a set of documents (see :func:`cider_d`)."""

    frequency: Mapping[tuple[str, ...], float]
    log_documents: float
    documents: int


_IDF: OrderedDict[str, CiderIdf] = OrderedDict()
_idf_lock = threading.Lock()


def cider_idf(documents: Sequence[Sequence[str]], *, n: int = 4) -> CiderIdf:
    """The idf of untokenised ``documents`` (each a list of texts), PTB-tokenised, computed
    once per distinct set of documents and process (a study version's captions)."""
    key = hashlib.sha256(
        "\x1e".join("\x1f".join(document) for document in documents).encode("utf-8")
    ).hexdigest()
    with _idf_lock:
        if key in _IDF:
            _IDF.move_to_end(key)
            return _IDF[key]
    flat = [text for document in documents for text in document]
    tokens = iter(ptb_tokenize_cached(flat))
    tokenised = [[next(tokens) for _ in document] for document in documents]
    idf = _document_frequency(tokenised, n)
    with _idf_lock:
        _IDF[key] = idf
        while len(_IDF) > 8:
            _IDF.popitem(last=False)
    return idf


def _document_frequency(documents: Sequence[Sequence[str]], n: int) -> CiderIdf:
    from collections import defaultdict

    import numpy as np
    from pycocoevalcap.cider.cider_scorer import precook

    frequency: dict[tuple[str, ...], float] = defaultdict(float)
    for document in documents:
        for ngram in {gram for text in document for gram in precook(text, n)}:
            frequency[ngram] += 1
    return CiderIdf(dict(frequency), float(np.log(float(max(1, len(documents))))), len(documents))


def cider_d(
    candidates: Sequence[str],
    references: Sequence[Sequence[str]],
    documents: Sequence[Sequence[str]] | None = None,
    *,
    n: int = 4,
    sigma: float = 6.0,
    idf: CiderIdf | None = None,
) -> list[float]:
    """Return CIDEr-D of each tokenised candidate against its references, idf from ``documents``.

    The arithmetic of pycocoevalcap's ``CiderScorer`` (clipped tf-idf n-gram vectors, n = 1..4,
    a Gaussian length penalty, mean over n-gram sizes and references, times 10), except that
    the document frequency of an n-gram is the number of ``documents`` (each a list of
    tokenised texts) containing it and ``log(len(documents))`` is the idf's numerator. With
    ``documents == references`` this is the toolkit's value. ``idf`` gives the frequencies
    computed before (:func:`cider_idf`) instead of ``documents``.
    """
    from collections import defaultdict

    import numpy as np
    from pycocoevalcap.cider.cider_scorer import precook

    if idf is None:
        if documents is None:
            raise ValueError("cider_d needs documents or their idf")
        idf = _document_frequency(documents, n)
    frequency = idf.frequency
    log_documents = idf.log_documents

    def vector(text: str) -> tuple[list[dict[tuple[str, ...], float]], list[float], int]:
        weights: list[dict[tuple[str, ...], float]] = [defaultdict(float) for _ in range(n)]
        norms = [0.0] * n
        length = 0
        for ngram, count in precook(text, n).items():
            size = len(ngram) - 1
            weights[size][ngram] = float(count) * (
                log_documents - float(np.log(max(1.0, frequency.get(ngram, 0.0)))))
            norms[size] += weights[size][ngram] ** 2
            if size == 1:  # the toolkit's quirk: "length" counts bigrams
                length += count
        return weights, [float(np.sqrt(value)) for value in norms], length

    scores = []
    for candidate, refs in zip(candidates, references, strict=True):
        weights, norms, length = vector(candidate)
        total = np.zeros(n)
        for reference in refs:
            ref_weights, ref_norms, ref_length = vector(reference)
            penalty = np.e ** (-(float(length - ref_length) ** 2) / (2 * sigma**2))
            for size in range(n):
                value = sum(min(weight, ref_weights[size][gram]) * ref_weights[size][gram]
                            for gram, weight in weights[size].items())
                if norms[size] != 0 and ref_norms[size] != 0:
                    value /= norms[size] * ref_norms[size]
                total[size] += value * penalty
        scores.append(float(np.mean(total) / len(refs) * 10.0))
    return scores


def java_available() -> bool:
    """Return True when a ``java`` executable is on PATH (METEOR and tokenisation need it)."""
    return shutil.which("java") is not None
