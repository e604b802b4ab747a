"""The shared cache of the metric code (:mod:`scoring.metrics.shared_cache`) kept in the
database, so that every worker of every machine reuses what one computed.

Reads and writes go in slices of a few hundred keys. Writes insert, skipping keys already
stored (``ON CONFLICT DO NOTHING``), in key order, so that two workers storing overlapping sets
never wait on each other in opposite orders. ``SCORING_SHARED_CACHE=0`` turns it off (each
process then keeps only its own memory).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from django.conf import settings

from scoring.metrics.shared_cache import SharedCache
from scoring.models import SharedCacheEntry

SLICE = 500


class DatabaseCache:
    """A :class:`~scoring.metrics.shared_cache.SharedCache` in ``SharedCacheEntry`` rows."""

    def get_many(self, namespace: str, keys: Sequence[str]) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        for start in range(0, len(keys), SLICE):
            rows = SharedCacheEntry.objects.filter(
                namespace=namespace, key__in=keys[start : start + SLICE]
            ).values_list("key", "value")
            found.update((key, bytes(value)) for key, value in rows)
        return found

    def put_many(self, namespace: str, values: Mapping[str, bytes]) -> None:
        entries = [SharedCacheEntry(namespace=namespace, key=key, value=values[key])
                   for key in sorted(values)]
        SharedCacheEntry.objects.bulk_create(entries, batch_size=SLICE, ignore_conflicts=True)


def shared_cache() -> SharedCache | None:
    """The cache scoring uses, or None when ``SCORING_SHARED_CACHE`` is off."""
    return DatabaseCache() if settings.SCORING_SHARED_CACHE else None


def shared_cache_clear(*, namespace: str = "") -> int:
    """Forget the cached values (of one namespace, or all); returns how many were deleted."""
    entries = SharedCacheEntry.objects.all()
    if namespace:
        entries = entries.filter(namespace=namespace)
    deleted, _ = entries.delete()
    return deleted


def shared_cache_summary() -> list[tuple[str, int]]:
    """``(namespace, entries)`` of what the cache holds, by namespace."""
    from django.db.models import Count

    rows = SharedCacheEntry.objects.values("namespace").annotate(entries=Count("id"))
    return sorted((row["namespace"], row["entries"]) for row in rows)
