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
