"""How closely an annotator's verdicts agree with the gold verdicts of the same items.

Pure functions without Django. An *item* is one caption that both the annotator and the gold
(an expert's correction) judged; each side is its :class:`~scoring.metrics.exports.CorrectedCaption`
as :func:`scoring.metrics.final.final_caption` builds it from that side's own pass (the
annotator's pass as they submitted it, before any QC amendment: it measures the annotator).

Measures (all over the items given; a verdict the pass left undecided counts as "accept", as in
the final verdicts):

- **overview kappa**: Cohen's kappa of the overview verdicts (accept / reject), annotator against
  gold (:func:`annotation.rules.agreement.cohen_kappa`); undefined (None) when chance agreement is
  already perfect (every verdict on both sides the same).
- **overview agreement**: the share of items whose overview verdicts are equal.
- **mode F1**: failure modes, micro-averaged over every unit of every item (the overview, each of
  the model's windows, the segmentation): per unit the annotator's set of modes A and the gold's
  set G add |A & G| true positives, |A - G| false positives, |G - A| false negatives;
  F1 = 2 TP / (2 TP + FP + FN); 1 when neither side tagged any mode (as the practice set's pass
  rule reads it, annotation.rules.gold).
- **window agreement**: the share of the model's windows (over all items) whose verdicts are
  equal.
- **words from gold**: the mean number of words between the annotator's corrected overview and
  the gold's (the study's edit size, :class:`~scoring.metrics.edits.EditSizing`: 0 when the two
  corrections say the same).
- **size difference**: the mean of the annotator's edit size minus the gold's (words changed
  against the model's overview): above 0 the annotator edits more than the expert.

**Small samples**: no rate over fewer than :data:`MIN_ITEMS` items (the profile's minimum group,
:data:`scoring.metrics.analysis.samples.MIN_GROUP`): below it every measure is None and
:attr:`GoldAgreement.note` says what it needs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from annotation.rules.agreement import cohen_kappa
from scoring.metrics.edits import EditSizing
from scoring.metrics.exports import REJECT, CorrectedCaption

# The profile's minimum group (scoring.metrics.analysis.samples.MIN_GROUP), written out so that
# the web process need not import the analysis library (pandas, scipy); a test keeps them equal.
MIN_ITEMS = 5

#: How many of an annotator's latest gold checks make their *recent* gold accuracy (the drift
#: warning of the dashboard and of the gold page reads it against the study's gold_drift_threshold,
#: by annotation.selectors.annotator_quality.gold_drift: the one drift rule).
RECENT_CHECKS = 10


@dataclass(frozen=True)
class ModeCounts:
    """Failure modes of the annotator against the gold, summed over units."""

    true_positive: int = 0
    false_positive: int = 0
    false_negative: int = 0

    def __add__(self, other: ModeCounts) -> ModeCounts:
        return ModeCounts(
            self.true_positive + other.true_positive,
            self.false_positive + other.false_positive,
            self.false_negative + other.false_negative,
        )

    @property
    def f1(self) -> float:
        """2 TP / (2 TP + FP + FN); 1 when neither side named a mode (they agree nothing failed),
        as the practice set's pass rule reads it (annotation.rules.gold.mode_f1)."""
        denominator = 2 * self.true_positive + self.false_positive + self.false_negative
        return 2 * self.true_positive / denominator if denominator else 1.0


def unit_modes(mine: Iterable[str], gold: Iterable[str]) -> ModeCounts:
    """The counts of one unit: the annotator's modes against the gold's."""
    a, g = set(mine), set(gold)
    return ModeCounts(len(a & g), len(a - g), len(g - a))


def item_modes(mine: CorrectedCaption, gold: CorrectedCaption) -> ModeCounts:
    """The counts of one item: its overview, each of the model's windows, its segmentation."""
    counts = unit_modes(mine.overview_modes, gold.overview_modes)
    counts += unit_modes(mine.segmentation_modes, gold.segmentation_modes)
    gold_windows = {w.index: w for w in gold.windows}
    for window in mine.windows:
        other = gold_windows.pop(window.index, None)
        counts += unit_modes(window.modes, other.modes if other else ())
    for other in gold_windows.values():
        counts += unit_modes((), other.modes)
    return counts


def window_matches(mine: CorrectedCaption, gold: CorrectedCaption) -> tuple[int, int]:
    """(windows with equal verdicts, windows compared) of one item: the model's windows that
    both sides judged (both list every window of the caption)."""
    gold_verdicts = {w.index: w.verdict for w in gold.windows}
    compared = [(w.verdict, gold_verdicts[w.index]) for w in mine.windows if w.index in gold_verdicts]
    return sum(1 for a, b in compared if a == b), len(compared)


@dataclass(frozen=True)
class GoldAgreement:
    """One annotator's agreement with the gold over `items` items (None: too few, see `note`)."""

    items: int
    overview_kappa: float | None = None
    overview_agreement: float | None = None
    mode_f1: float | None = None
    window_agreement: float | None = None
    windows: int = 0
    words_from_gold: float | None = None
    size_difference: float | None = None
    note: str = ""


def too_few_note(items: int, minimum: int = MIN_ITEMS) -> str:
    return f"not computed: {items} item{'s' if items != 1 else ''}, needs at least {minimum}" if items < minimum else ""


def gold_agreement(
    pairs: Sequence[tuple[CorrectedCaption, CorrectedCaption]],
    *,
    sizing: EditSizing,
    minimum: int = MIN_ITEMS,
) -> GoldAgreement:
    """The annotator's agreement with the gold over `pairs` of (annotator's, gold's) caption
    of the same items (see the module docstring). Below `minimum` items nothing is computed."""
    items = len(pairs)
    if items < minimum:
        return GoldAgreement(items=items, note=too_few_note(items, minimum))
    overview_mine = [mine.overview_verdict for mine, _ in pairs]
    overview_gold = [gold.overview_verdict for _, gold in pairs]
    modes = ModeCounts()
    equal_windows = compared_windows = 0
    distances: list[int] = []
    differences: list[int] = []
    for mine, gold in pairs:
        modes += item_modes(mine, gold)
        equal, compared = window_matches(mine, gold)
        equal_windows += equal
        compared_windows += compared
        distances.append(sizing.measure(gold.overview, mine.overview).words_changed)
        differences.append(_size(mine, sizing) - _size(gold, sizing))
    return GoldAgreement(
        items=items,
        overview_kappa=cohen_kappa(overview_mine, overview_gold),
        overview_agreement=sum(1 for a, b in zip(overview_mine, overview_gold, strict=True) if a == b) / items,
        mode_f1=modes.f1,
        window_agreement=equal_windows / compared_windows if compared_windows else None,
        windows=compared_windows,
        words_from_gold=sum(distances) / items,
        size_difference=sum(differences) / items,
    )


def _size(caption: CorrectedCaption, sizing: EditSizing) -> int:
    """Words the caption's final overview changed against the model's (0 when accepted)."""
    if caption.overview_verdict != REJECT:
        return 0
    return sizing.measure(caption.original_overview, caption.overview).words_changed


def accuracy(pairs: Sequence[tuple[CorrectedCaption, CorrectedCaption]]) -> list[bool]:
    """Per item, whether the annotator's overview verdict equals the gold's (the running
    accuracy the dashboard's drift warning reads), in the order given."""
    return [mine.overview_verdict == gold.overview_verdict for mine, gold in pairs]


def recent_accuracy(correct: Sequence[bool], *, last: int, minimum: int = MIN_ITEMS) -> float | None:
    """The share of the `last` most recent gold checks answered right (the end of `correct`,
    oldest first); None below `minimum` of them."""
    recent = list(correct)[-last:] if last > 0 else []
    if len(recent) < minimum:
        return None
    return sum(recent) / len(recent)
