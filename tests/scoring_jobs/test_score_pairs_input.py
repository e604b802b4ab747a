"""`manage.py score_pairs` reads its lines with the project's JSON reader: a line no reader
should choke on is a bad line named by its number, never a traceback."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

GOOD = '{"id": 1, "candidate": "a b", "reference": "a c"}'


@pytest.mark.parametrize(("line", "said"), [
    ("[" * 100_000 + "]" * 100_000, "not readable: nested more than 32 levels deep"),
    ('{"id": ' + "7" * 5_000 + ', "candidate": "a", "reference": "b"}',
     "not readable: id: 77777777777777777777... is a number with more than 30 digits"),
    ('{"id": 2, "candidate": "a\\u0000", "reference": "b"}',
     "not readable: candidate: text contains a NUL character"),
    ('{"id": 2, "candidate": "a", "reference": ["\\udc00"]}',
     "not readable: reference[0]: text contains an unpaired surrogate"),
    ('{"id": NaN, "candidate": "a", "reference": "b"}', "not readable: id: NaN is NaN"),
])
def test_an_unreadable_line_is_a_bad_line_named_by_its_number(tmp_path, line, said):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(GOOD + "\n" + line + "\n", encoding="utf-8")
    err = io.StringIO()
    with pytest.raises(CommandError, match="1 bad line"):
        call_command("score_pairs", str(pairs), "--metrics", "words_changed",
                     "--out", str(tmp_path / "out.jsonl"), stdout=io.StringIO(), stderr=err)
    assert f"{pairs}:2: {said}" in err.getvalue()
    assert not (tmp_path / "out.jsonl").exists()
