"""Words the URL configuration uses as routes of their own under /studies/ and /api/studies/
(``studies/new/``, ``studies/slug-check/``...): a study with such a slug could never be reached
there. Read from the resolver, so a route added later is reserved as soon as it exists."""

from __future__ import annotations

import functools

from django.urls import URLPattern, URLResolver, get_resolver

STUDY_PREFIXES = ("studies/", "api/studies/")


def _routes(patterns, prefix: str = ""):
    for entry in patterns:
        if isinstance(entry, URLResolver):
            yield from _routes(entry.url_patterns, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            yield prefix + str(entry.pattern)


@functools.cache
def study_route_words() -> frozenset[str]:
    """The first path segment after `studies/` of every route where it is a fixed word."""
    words = set()
    for route in _routes(get_resolver().url_patterns):
        for prefix in STUDY_PREFIXES:
            if route.startswith(prefix):
                word = route[len(prefix):].split("/")[0]
                if word and "<" not in word and "(" not in word:
                    words.add(word.removesuffix("$"))
    return frozenset(words)
