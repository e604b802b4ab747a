"""A metric that takes a while per item, so that a test can kill a worker in the middle of a job.

Importing this module registers it (family ``test-slow``, metric ``test_slow_length``: the
candidate's length in characters, after sleeping :data:`DELAY_S`). Only the worker-kill test
imports it: in its own process, and in the workers it starts through ``worker_main.py``.
Nothing in the application knows about it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from scoring.metrics.registry import Metric, Pair, ScoringOptions, register_family

FAMILY = "test-slow"
METRIC = "test_slow_length"
DELAY_S = 0.25


def _score(pairs: Sequence[Pair], names: Sequence[str], options: ScoringOptions):
    scores = {}
    for pair in pairs:
        time.sleep(DELAY_S)
        scores[pair.id] = {name: float(len(pair.candidate)) for name in names}
    return scores


def register() -> None:
    register_family(FAMILY, _score, [Metric(METRIC, FAMILY, "Candidate length, slowly (tests)")])


register()


FAILING_FAMILY = "test-failing"
FAILING_METRIC = "test_failing_length"
#: A candidate containing this makes the failing family raise for its whole batch.
POISON = "POISON"


def _score_or_fail(pairs: Sequence[Pair], names: Sequence[str], options: ScoringOptions):
    if any(POISON in pair.candidate for pair in pairs):
        raise RuntimeError("the test family refuses a poisoned caption")
    return {pair.id: {name: float(len(pair.candidate)) for name in names} for pair in pairs}


def register_failing() -> None:
    register_family(
        FAILING_FAMILY, _score_or_fail,
        [Metric(FAILING_METRIC, FAILING_FAMILY, "Candidate length, or an error (tests)")],
    )


register_failing()
