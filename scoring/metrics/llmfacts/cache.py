"""A cache for model answers, keyed by (model id, prompt version, step, sha256 of the inputs).

Extraction answers are keyed by the text, checking answers by the text and the facts checked
against it, so a reference paired with many predictions has its facts extracted once. Values are
plain JSON (lists and dicts); only successful, validated results are stored.

Memory always; with a directory, also one JSON file per key, written atomically, so several
processes can share a directory and a crash never leaves half a file behind.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

CacheKey = tuple[str, ...]


def sha256_text(text: str) -> str:
    """Hex sha256 of the UTF-8 bytes of ``text``, unnormalised: other whitespace, other key."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def cache_key(model_id: str, prompt_version: str, step: str, texts: Sequence[str]) -> CacheKey:
    """The key of one model step: who answered, with which prompts, to which inputs."""
    return (model_id, prompt_version, step, *(sha256_text(text) for text in texts))


class ResultCache:
    """Thread-safe cache of JSON values, in memory and optionally in ``directory``."""

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.directory = Path(directory) if directory is not None else None
        if self.directory is not None:
            self.directory.mkdir(parents=True, exist_ok=True)
        self._memory: dict[CacheKey, Any] = {}
        self._lock = threading.Lock()
        self._key_locks: dict[CacheKey, threading.Lock] = {}

    def get(self, key: CacheKey) -> Any | None:
        """The stored value for ``key``, or ``None``."""
        with self._lock:
            if key in self._memory:
                return self._memory[key]
        value = self._read_file(key)
        if value is not None:
            with self._lock:
                self._memory[key] = value
        return value

    def set(self, key: CacheKey, value: Any) -> None:
        """Store a JSON-serialisable ``value`` under ``key``."""
        with self._lock:
            self._memory[key] = value
        self._write_file(key, value)

    def get_or_compute(self, key: CacheKey, compute: Callable[[], Any]) -> Any:
        """The stored value for ``key``, computing and storing it first if absent.

        Concurrent callers with the same key wait for one computation instead of asking the model
        the same question twice (a reference scored against many predictions at once). When
        ``compute`` raises, nothing is stored and the exception propagates.
        """
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            value = self.get(key)
            if value is None:
                value = compute()
                self.set(key, value)
            return value

    def __len__(self) -> int:
        with self._lock:
            return len(self._memory)

    def stored(self) -> Iterator[tuple[CacheKey, Any]]:
        """Every answer kept, in memory and on disk: (key, value)."""
        with self._lock:
            remembered = list(self._memory.items())
        yield from remembered
        if self.directory is None:
            return
        for path in sorted(self.directory.glob("*.json")):
            try:
                stored = json.loads(path.read_text(encoding="utf-8"))
            except (FileNotFoundError, json.JSONDecodeError):
                continue
            if isinstance(stored, dict) and isinstance(stored.get("key"), list):
                yield tuple(stored["key"]), stored.get("value")

    def forget(self, keys: Iterable[CacheKey]) -> int:
        """Drop the answers of ``keys`` from memory and disk; how many were dropped."""
        dropped = 0
        for key in set(keys):
            with self._lock:
                remembered = self._memory.pop(key, None) is not None
            on_disk = False
            if self.directory is not None:
                path = self._path(key)
                on_disk = path.exists()
                path.unlink(missing_ok=True)
            dropped += remembered or on_disk
        return dropped

    def _path(self, key: CacheKey) -> Path:
        assert self.directory is not None
        name = hashlib.sha256(json.dumps(list(key)).encode("utf-8")).hexdigest()
        return self.directory / f"{name}.json"

    def _read_file(self, key: CacheKey) -> Any | None:
        if self.directory is None:
            return None
        try:
            stored = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError):
            return None
        # The file name is a hash of the key; comparing the key itself rules out a collision.
        if not isinstance(stored, dict) or stored.get("key") != list(key):
            return None
        return stored.get("value")

    def _write_file(self, key: CacheKey, value: Any) -> None:
        if self.directory is None:
            return
        path = self._path(key)
        handle, temporary = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                json.dump({"key": list(key), "value": value}, file, ensure_ascii=False)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
