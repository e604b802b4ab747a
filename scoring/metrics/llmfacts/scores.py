"""The arithmetic of LLMFactsF1 (METRICS.md section 4), separate from any model.

For texts A and B, with k_A facts extracted from A and checked against B:

- ENT_AB = |E_AB| / k_A and CONT_AB = |C_AB| / k_A; likewise ENT_BA and CONT_BA;
- ENT_F1 = harmonic mean of ENT_AB and ENT_BA; CONT_F1 = harmonic mean of CONT_AB and CONT_BA;
- LLMFactsF1 = 2 * ENT_F1 * (1 - CONT_F1) / (ENT_F1 + (1 - CONT_F1)).

Edge cases, where a formula divides by zero:

- k_A = 0 (no facts in A): ENT_AB = CONT_AB = 0. A text that states nothing checkable supports
  nothing and contradicts nothing; an empty caption must not score well.
- A harmonic mean with a zero operand is 0 (its limit), including 0 and 0.
- ENT_F1 + (1 - CONT_F1) = 0 happens only when ENT_F1 = 0 and CONT_F1 = 1; LLMFactsF1 is then 0.

So two texts without any facts score LLMFactsF1 = 0, and every number lies in [0, 1].
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .parsing import Label


@dataclass(frozen=True)
class DirectionCounts:
    """Label counts for the facts of one text checked against the other."""

    entailment: int
    contradiction: int
    neutral: int

    @property
    def total(self) -> int:
        """k, the number of facts checked."""
        return self.entailment + self.contradiction + self.neutral

    @property
    def ent(self) -> float:
        """|E| / k, or 0 when there are no facts."""
        return self.entailment / self.total if self.total else 0.0

    @property
    def cont(self) -> float:
        """|C| / k, or 0 when there are no facts."""
        return self.contradiction / self.total if self.total else 0.0


@dataclass(frozen=True)
class Scores:
    """All numbers of LLMFactsF1 for one pair (A, B); each lies in [0, 1]."""

    ent_ab: float
    cont_ab: float
    ent_ba: float
    cont_ba: float
    ent_f1: float
    cont_f1: float
    llmfacts_f1: float


def count_labels(labels: Iterable[Label]) -> DirectionCounts:
    """Count entailment, contradiction and neutral labels."""
    label_list = list(labels)
    return DirectionCounts(
        entailment=label_list.count("entailment"),
        contradiction=label_list.count("contradiction"),
        neutral=label_list.count("neutral"),
    )


def harmonic_mean(x: float, y: float) -> float:
    """2xy / (x + y) for x, y >= 0; 0 when either is 0 (the limit, and no division by zero)."""
    if x <= 0.0 or y <= 0.0:
        return 0.0
    return 2.0 * x * y / (x + y)


def combine(ent_f1: float, cont_f1: float) -> float:
    """LLMFactsF1 from ENT_F1 and CONT_F1: the harmonic mean of ENT_F1 and 1 - CONT_F1."""
    return harmonic_mean(ent_f1, 1.0 - cont_f1)


def compute_scores(a_to_b: DirectionCounts, b_to_a: DirectionCounts) -> Scores:
    """Every LLMFactsF1 number from the counts of both directions.

    ``a_to_b`` counts the labels of A's facts checked against B, ``b_to_a`` the reverse.
    """
    ent_f1 = harmonic_mean(a_to_b.ent, b_to_a.ent)
    cont_f1 = harmonic_mean(a_to_b.cont, b_to_a.cont)
    return Scores(
        ent_ab=a_to_b.ent,
        cont_ab=a_to_b.cont,
        ent_ba=b_to_a.ent,
        cont_ba=b_to_a.cont,
        ent_f1=ent_f1,
        cont_f1=cont_f1,
        llmfacts_f1=combine(ent_f1, cont_f1),
    )
