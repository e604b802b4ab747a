"""The scoring app (Django): scoring jobs and stored results, failure-profile exports, their API.

The metric code it runs is the pure library in :mod:`scoring.metrics`, which imports nothing
from Django (the import contracts in ``pyproject.toml`` hold it to that).
"""
