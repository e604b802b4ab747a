"""The in-process cache of the metric library: namespaces apart, the least recently used
forgotten past its bound, a stored key never changed."""

from scoring.metrics.shared_cache import MemoryCache, text_key


def test_a_bounded_memory_cache_forgets_the_least_recently_used_key():
    cache = MemoryCache(max_entries=2)
    cache.put_many("n", {"a": b"1", "b": b"2"})
    assert cache.get_many("n", ["a"]) == {"a": b"1"}  # "b" is now the least recently used
    cache.put_many("n", {"c": b"3"})
    assert cache.get_many("n", ["a", "b", "c"]) == {"a": b"1", "c": b"3"}


def test_a_memory_cache_keeps_namespaces_apart_and_the_first_value():
    cache = MemoryCache()
    cache.put_many("n", {"a": b"1"})
    cache.put_many("n", {"a": b"changed"})
    assert cache.get_many("n", ["a"]) == {"a": b"1"} and cache.get_many("m", ["a"]) == {}


def test_text_keys_do_not_run_texts_together():
    assert text_key("ab", "c") != text_key("a", "bc")
    assert len(text_key("a")) == 64
