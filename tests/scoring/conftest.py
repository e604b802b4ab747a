"""Shared setup for the scoring tests: models load from installed packages only."""

from __future__ import annotations

import os

# Set before any test imports huggingface_hub, which reads it once: a test that tried to reach a
# model hub would then fail at once instead of hanging on a machine without network.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


import pytest  # noqa: E402 - after the environment above, on purpose


@pytest.fixture(autouse=True)
def _no_database_cache(settings):
    """The metric library's tests run without a database: judges keep vectors in memory only
    (the database's shared cache is tested in tests/scoring_jobs/test_shared_cache.py)."""
    settings.SCORING_SHARED_CACHE = False
