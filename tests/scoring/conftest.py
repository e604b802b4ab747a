"""Shared setup for the scoring tests: models load from installed packages only."""

from __future__ import annotations

import os

# Set before any test imports huggingface_hub, which reads it once: a test that tried to reach a
# model hub would then fail at once instead of hanging on a machine without network.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
