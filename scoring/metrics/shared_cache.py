"""A cache that several processes (and machines) share, for values that are slow to compute and
never change for the same input: METEOR's statistics of a (hypothesis, reference) pair, a
judge's vector of a text.

The metric code only knows the :class:`SharedCache` protocol: bytes under a namespace (what
computed them, with its version) and a key (a hash of the input, :func:`text_key`). The scoring
app supplies one kept in the database (``scoring.shared_cache``), so every Celery worker of a
study reuses what any other worker computed; :class:`MemoryCache` is the in-process one for
tests and scripts. A cache is an accelerator only: a value that is missing is computed again.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Protocol


class SharedCache(Protocol):
    """Values by ``(namespace, key)``. Both calls may be handed hundreds of keys at once."""

    def get_many(self, namespace: str, keys: Sequence[str]) -> dict[str, bytes]:
        """The stored values of those keys that are stored."""
        ...

    def put_many(self, namespace: str, values: Mapping[str, bytes]) -> None:
        """Store the values; a key stored before keeps its value (the same, by construction)."""
        ...


def text_key(*texts: str) -> str:
    """The key of one input made of ``texts``: a SHA-256, 64 hex digits."""
    digest = hashlib.sha256()
    for text in texts:
        encoded = text.encode("utf-8")
        # Why the length first: ("ab", "c") and ("a", "bc") must not share a key.
        digest.update(len(encoded).to_bytes(8, "big"))
        digest.update(encoded)
    return digest.hexdigest()


class MemoryCache:
    """A :class:`SharedCache` in this process's memory, forgetting the least recently used of
    more than ``max_entries`` (None: never); ``reads`` and ``writes`` count keys."""

    def __init__(self, max_entries: int | None = None) -> None:
        self.values: OrderedDict[tuple[str, str], bytes] = OrderedDict()
        self.max_entries = max_entries
        self.reads = 0
        self.writes = 0
        self._lock = threading.Lock()

    def get_many(self, namespace: str, keys: Sequence[str]) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        with self._lock:
            self.reads += len(keys)
            for key in keys:
                if (namespace, key) in self.values:
                    self.values.move_to_end((namespace, key))
                    found[key] = self.values[(namespace, key)]
        return found

    def put_many(self, namespace: str, values: Mapping[str, bytes]) -> None:
        with self._lock:
            self.writes += len(values)
            for key, value in values.items():
                self.values.setdefault((namespace, key), value)
                self.values.move_to_end((namespace, key))
            while self.max_entries is not None and len(self.values) > self.max_entries:
                self.values.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self.values.clear()
