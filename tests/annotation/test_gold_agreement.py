"""An annotator's agreement with gold verdicts, against values computed by hand; no database."""

import pytest

from annotation.rules.gold_agreement import (
    MIN_ITEMS,
    GoldAgreement,
    ModeCounts,
    accuracy,
    gold_agreement,
    item_modes,
    recent_accuracy,
    window_matches,
)
from scoring.metrics.analysis.samples import MIN_GROUP
from scoring.metrics.edits import EditSizing
from scoring.metrics.exports import CorrectedCaption, CorrectedWindow

SIZING = EditSizing()
MODEL_TEXT = "a red car drives down a wet road"


def caption(verdict="accept", text=MODEL_TEXT, modes=(), windows=(), segmentation="accept", seg_modes=()):
    """A caption as one side leaves it: `windows` are (verdict, modes) of the model's windows."""
    return CorrectedCaption(
        clip="c", model="m", overview=text, overview_verdict=verdict, original_overview=MODEL_TEXT,
        windows=tuple(
            CorrectedWindow(index=i, start=i, end=i + 1, scene="s", shot="t", verdict=v, modes=tuple(m))
            for i, (v, m) in enumerate(windows)
        ),
        segmentation_verdict=segmentation, overview_modes=tuple(modes), segmentation_modes=tuple(seg_modes),
        sizing=SIZING,
    )


def test_the_minimum_is_the_profiles_minimum_group():
    assert MIN_ITEMS == MIN_GROUP == 5


def test_mode_counts_of_one_item_sum_over_overview_windows_and_segmentation():
    mine = caption("reject", "a blue car", modes=["object", "colour"],
                   windows=[("reject", ["action"]), ("accept", ())], segmentation="reject", seg_modes=["split"])
    gold = caption("reject", "a blue car", modes=["colour"],
                   windows=[("reject", ["action", "count"]), ("reject", ["place"])])
    # overview: A={object, colour}, G={colour}: TP 1, FP 1 (object), FN 0
    # window 0: A={action}, G={action, count}: TP 1, FN 1 (count)
    # window 1: A={}, G={place}: FN 1
    # segmentation: A={split}, G={}: FP 1
    assert item_modes(mine, gold) == ModeCounts(true_positive=2, false_positive=2, false_negative=2)
    # F1 = 2*2 / (2*2 + 2 + 2) = 4/8
    assert item_modes(mine, gold).f1 == pytest.approx(0.5)
    # Neither side named a mode: they agree that nothing failed (as the practice pass rule reads it).
    assert ModeCounts().f1 == 1.0


def test_window_matches_count_the_windows_both_sides_judged():
    mine = caption(windows=[("accept", ()), ("reject", ["a"]), ("accept", ())])
    gold = caption(windows=[("accept", ()), ("accept", ()), ("accept", ())])
    assert window_matches(mine, gold) == (2, 3)


def test_gold_agreement_against_a_hand_computation():
    # Six items; overview verdicts (annotator, gold):
    #   1 reject/reject, 2 reject/reject, 3 accept/accept, 4 accept/reject, 5 reject/accept, 6 accept/accept
    # Observed agreement p_o = 4/6. Marginals: annotator 3 reject, 3 accept; gold 3 reject, 3 accept.
    # p_e = (3*3 + 3*3) / 36 = 0.5; kappa = (4/6 - 0.5) / (1 - 0.5) = 1/3.
    gold_text = "a blue car drives down a wet road"          # 1 word changed from the model's
    pairs = [
        # 1: the annotator wrote the gold's text: 0 words from gold; sizes 1 and 1
        (caption("reject", gold_text, ["colour"], windows=[("accept", ())]),
         caption("reject", gold_text, ["colour"], windows=[("accept", ())])),
        # 2: "a blue van drives ..." vs gold: 1 word from gold; sizes 2 and 1 (difference +1)
        (caption("reject", "a blue van drives down a wet road", ["colour", "object"], windows=[("reject", ["x"])]),
         caption("reject", gold_text, ["colour"], windows=[("reject", ["x"])])),
        # 3: both accept: final texts are the model's: 0 words, sizes 0 and 0
        (caption(windows=[("accept", ())]), caption(windows=[("reject", ["y"])])),
        # 4: annotator accepts (model text), gold rejects: 1 word from gold; sizes 0 and 1 (-1)
        (caption(windows=[("accept", ())]), caption("reject", gold_text, ["colour"], windows=[("accept", ())])),
        # 5: annotator rejects with 2 words changed, gold accepts: 2 words from gold; sizes 2 and 0 (+2)
        (caption("reject", "a blue car drives down a dry road", ["colour"], windows=[("accept", ())]),
         caption(windows=[("accept", ())])),
        # 6: both accept
        (caption(windows=[("accept", ())]), caption(windows=[("accept", ())])),
    ]
    result = gold_agreement(pairs, sizing=SIZING)
    assert result.items == 6
    assert result.overview_kappa == pytest.approx(1 / 3)
    assert result.overview_agreement == pytest.approx(4 / 6)
    # Modes per item (TP, FP, FN): 1 (1,0,0); 2 overview (1,1,0) + window (1,0,0); 3 window (0,0,1);
    # 4 (0,0,1); 5 (0,1,0); 6 (0,0,0). Sum TP 3, FP 2, FN 2: F1 = 6 / (6 + 2 + 2) = 0.6.
    assert result.mode_f1 == pytest.approx(0.6)
    # Windows: items 1, 2, 4, 5, 6 agree; item 3 does not: 5/6.
    assert (result.window_agreement, result.windows) == (pytest.approx(5 / 6), 6)
    # Words from gold: 0 + 1 + 0 + 1 + 2 + 0 = 4 over 6 items.
    assert result.words_from_gold == pytest.approx(4 / 6)
    # Size differences: 0 + 1 + 0 - 1 + 2 + 0 = 2 over 6 items.
    assert result.size_difference == pytest.approx(2 / 6)
    assert result.note == ""


def test_no_rate_over_fewer_than_the_minimum_items():
    same = (caption("reject", "x", ["a"]), caption("reject", "x", ["a"]))
    result = gold_agreement([same] * (MIN_ITEMS - 1), sizing=SIZING)
    note = f"not computed: {MIN_ITEMS - 1} items, needs at least {MIN_ITEMS}"
    assert result == GoldAgreement(items=MIN_ITEMS - 1, note=note)
    assert gold_agreement([same] * MIN_ITEMS, sizing=SIZING).overview_agreement == 1.0
    # Every verdict the same on both sides: agreement is perfect, kappa is undefined.
    assert gold_agreement([same] * MIN_ITEMS, sizing=SIZING).overview_kappa is None


def test_recent_accuracy_reads_the_last_checks_and_blanks_too_few():
    pairs = [(caption("reject", "x"), caption("reject", "x")), (caption(), caption("reject", "x"))]
    assert accuracy(pairs) == [True, False]
    # Oldest first: the last 5 are F, T, F, T, T: 3/5.
    history = [True, True, False, True, False, True, True]
    assert recent_accuracy(history, last=5) == pytest.approx(0.6)
    assert recent_accuracy(history[:4], last=5) is None
    assert recent_accuracy(history, last=0) is None
