"""The strict JSON reader: what the database cannot store is refused, saying where."""

import pytest

from annotation.api.parsers import MAX_DEPTH, json_loads_strict


@pytest.mark.parametrize("text", [
    '{"a": [1, 2.5, -3, "text", null, true, {"b": "c"}]}',
    '"\\u00e9\\ud83d\\ude00"',  # a surrogate pair is one character, fine
    "[" * MAX_DEPTH + "]" * MAX_DEPTH,
    "1" * 30,
])
def test_storable_json_is_read_as_usual(text):
    import json

    assert json_loads_strict(text) == json.loads(text)


@pytest.mark.parametrize(("text", "message"), [
    ("[" * 50_000 + "]" * 50_000, "nested more than 32 levels deep"),
    ('{"a": ' + "[" * 40 + "]" * 40 + "}", "a[0][0]"),
    ('{"n": ' + "1" * 5_000 + "}", "n: 11111111111111111111... is a number with more than 30"),
    ('{"n": -' + "1" * 31 + "}", "n: -1111"),
    ('{"n": 1e400}', "n: 1e400 is a number too large to store"),
    ('{"n": [NaN]}', "n[0]: NaN is NaN"),
    ('{"n": -Infinity}', "n: -Infinity"),
    ('{"a": {"b": "x\\u0000"}}', "a.b: text contains a NUL character"),
    ('{"a\\u0000": 1}', "the body: a key contains a NUL"),
    ('["\\udc00"]', "[0]: text contains an unpaired surrogate"),
])
def test_unstorable_json_is_refused_naming_the_place(text, message):
    with pytest.raises(ValueError) as refused:
        json_loads_strict(text)
    assert message in str(refused.value)
