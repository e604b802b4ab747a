"""Cohen's kappa and Krippendorff's alpha reproduce published values; no database."""

import pytest

from annotation.rules.agreement import agreement, cohen_kappa, krippendorff_alpha_nominal

N = None


def two_raters(yes_yes: int, yes_no: int, no_yes: int, no_no: int) -> tuple[list[str], list[str]]:
    pairs = (
        [("y", "y")] * yes_yes
        + [("y", "n")] * yes_no
        + [("n", "y")] * no_yes
        + [("n", "n")] * no_no
    )
    return [a for a, _ in pairs], [b for _, b in pairs]


@pytest.mark.parametrize(
    ("table", "published"),
    [
        # Worked examples of the Wikipedia article "Cohen's kappa" (2x2 tables of 50 and 100 items).
        ((20, 5, 10, 15), 0.40),
        ((45, 15, 25, 15), 0.1304),
        ((25, 35, 5, 35), 0.2593),
    ],
)
def test_cohen_kappa_reproduces_published_examples(table, published):
    first, second = two_raters(*table)
    assert cohen_kappa(first, second) == pytest.approx(published, abs=5e-5)


def test_cohen_kappa_is_one_for_perfect_agreement_and_undefined_without_variation():
    assert cohen_kappa(["a", "b", "a"], ["a", "b", "a"]) == pytest.approx(1.0)
    assert cohen_kappa(["a", "a"], ["a", "a"]) is None
    assert cohen_kappa([], []) is None


def test_cohen_kappa_refuses_lists_of_different_lengths():
    with pytest.raises(ValueError, match="same items"):
        cohen_kappa(["a"], ["a", "b"])


def test_krippendorff_alpha_reproduces_the_binary_two_observer_example():
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability", section A: alpha = 0.095.
    a = [0, 1, 0, 0, 0, 0, 0, 0, 1, 0]
    b = [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]
    assert krippendorff_alpha_nominal(zip(a, b, strict=True)) == pytest.approx(0.095, abs=5e-4)


def test_krippendorff_alpha_reproduces_the_nominal_example_with_missing_values():
    # Krippendorff (2011), section C: four observers, twelve units, missing data; alpha = 0.743.
    observers = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, N, N, N],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, N, 3],
        [N, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, N],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, N],
    ]
    units = list(zip(*observers, strict=True))
    assert krippendorff_alpha_nominal(units) == pytest.approx(0.743, abs=5e-4)


def test_krippendorff_alpha_reproduces_the_wikipedia_example():
    # Wikipedia, "Krippendorff's alpha": three coders, fifteen units; nominal alpha = 0.691.
    coders = [
        [N, N, N, N, N, 3, 4, 1, 2, 1, 1, 3, 3, N, 3],
        [1, N, 2, 1, 3, 3, 4, 3, N, N, N, N, N, N, N],
        [N, N, 2, 1, 3, 4, 4, N, 2, 1, 1, 3, 3, N, 4],
    ]
    assert krippendorff_alpha_nominal(zip(*coders, strict=True)) == pytest.approx(0.691, abs=5e-4)


def test_krippendorff_alpha_is_undefined_without_pairable_units_or_variation():
    assert krippendorff_alpha_nominal([("a", None), (None, "b")]) is None
    assert krippendorff_alpha_nominal([("a", "a"), ("a", "a")]) is None


def test_agreement_counts_only_units_judged_twice_and_uses_the_first_two_for_kappa():
    units = [
        ("accept", "accept"),
        ("reject", "accept", "reject"),
        ("accept", None),
        ("reject", "reject"),
    ]
    result = agreement(units)
    assert result.items == 3
    assert result.kappa == pytest.approx(
        cohen_kappa(["accept", "reject", "reject"], ["accept", "accept", "reject"])
    )
    assert result.alpha == pytest.approx(
        krippendorff_alpha_nominal(
            [("accept", "accept"), ("reject", "accept", "reject"), ("reject", "reject")]
        )
    )


def test_two_raters_agree_with_scikit_learn_where_it_is_installed():
    metrics = pytest.importorskip("sklearn.metrics")
    first = ["a", "b", "c", "a", "b", "a", "c", "c", "b", "a"]
    second = ["a", "b", "b", "a", "c", "a", "c", "a", "b", "b"]
    assert cohen_kappa(first, second) == pytest.approx(metrics.cohen_kappa_score(first, second))
