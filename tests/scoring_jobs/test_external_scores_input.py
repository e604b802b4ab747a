"""Score files that no reader should choke on: the score import answers 400 naming the line and
field (or 413 naming the limit), never a server error or a traceback, and stores nothing.

Each case ran into a 500 through the API (and a traceback from ``manage.py import_scores``)
before the score import used the project's JSON parser and its limits.
"""

from __future__ import annotations

import io
import json
import math

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from scoring.models import ExternalScore
from tests.annotation.studybuild import caption_record, captions_add, fake_clip

pytestmark = pytest.mark.django_db


@pytest.fixture
def captioned(study):
    """Clip k captioned by models A and B: what a score line may name."""
    fake_clip(study, "k")
    captions_add(study, [caption_record("k", "A"), caption_record("k", "B")])
    return study

FIELDS = {"metric": "vlm_defects", "direction": "lower", "version": "1", "source": "judge"}


def score(**fields) -> str:
    return json.dumps({"clip": "k", "model": "A", "value": 1, **fields})


#: (a line of a score file, what the refusal says about it)
UNREADABLE = [
    pytest.param("[" * 100_000 + "]" * 100_000, "line 1: nested more than 32 levels deep",
                 id="100,000 nested brackets"),
    pytest.param('{"clip": "k", "model": "A", "value": 1' + "0" * 400 + "}",
                 "line 1, value: 10000000000000000000... is a number with more than 30 digits",
                 id="1 followed by 400 zeros"),
    pytest.param('{"clip": "k", "model": "A", "value": ' + "7" * 5_000 + "}",
                 "line 1, value: 77777777777777777777... is a number with more than 30 digits",
                 id="5,000 digits"),
    pytest.param('{"clip": "k", "model": "A", "value": 1e400}',
                 "line 1, value: 1e400 is a number too large to store", id="1e400"),
    pytest.param('{"clip": "k", "model": "A", "value": NaN}',
                 "line 1, value: NaN is NaN, which is not a number JSON allows", id="NaN"),
    pytest.param(score(version="1\u0000"), "line 1, version: text contains a NUL character",
                 id="NUL in version"),
    pytest.param(score(source="\u0000"), "line 1, source: text contains a NUL character",
                 id="NUL in source"),
    pytest.param(score().replace('"A"', '"\\ud800"'),
                 "line 1, model: text contains an unpaired surrogate (\\ud800)", id="lone surrogate"),
    pytest.param(score(**{"\u0000": 1}), "line 1: a key contains a NUL character", id="NUL in a key"),
]


def post(user, data: bytes, **fields):
    client = APIClient()
    client.force_authenticate(user)
    client.raise_request_exception = False
    upload = SimpleUploadedFile("scores.jsonl", data)
    return client.post("/api/studies/s1/scores/import/", {"file": upload, **FIELDS, **fields},
                       format="multipart")


@pytest.mark.parametrize(("line", "said"), UNREADABLE)
def test_an_unreadable_score_line_is_refused_by_the_api(captioned, personas, line, said):
    """Run on PostgreSQL too (``make test``): that is where a NUL reached a 500."""
    # A good line after the bad one is not stored either: the import is all or nothing.
    response = post(personas["admin"], (line + "\n" + score(model="B") + "\n").encode())
    assert response.status_code == 400, response.content[:500]
    assert said in response.json()["errors"][0], response.json()
    assert not ExternalScore.objects.exists()


@pytest.mark.parametrize(("line", "said"), UNREADABLE)
def test_an_unreadable_score_line_is_refused_by_the_command_without_a_traceback(
        captioned, tmp_path, line, said):
    path = tmp_path / "scores.jsonl"
    path.write_bytes((line + "\n").encode("utf-8", "surrogatepass"))
    err = io.StringIO()
    with pytest.raises(CommandError, match="nothing was stored"):
        call_command("import_scores", str(path), "--study", "s1", "--metric", "vlm_defects",
                     "--direction", "lower", "--metric-version", "1", "--source", "judge",
                     stdout=io.StringIO(), stderr=err)
    assert f"{path}: {said}" in err.getvalue()
    assert not ExternalScore.objects.exists()


@pytest.mark.parametrize(("field", "value"), [("version", "1\u0000"), ("source", "a\u0000b")])
def test_a_file_wide_field_the_database_cannot_store_is_refused_by_the_api_naming_it(
        captioned, personas, field, value):
    response = post(personas["admin"], (score() + "\n").encode(), **{field: value})
    assert response.status_code == 400, response.content[:500]
    assert field in response.json()["detail"]
    assert not ExternalScore.objects.exists()


@pytest.mark.parametrize(("option", "value", "said"), [
    ("--source", "judge\udcff", "source: text contains an unpaired surrogate (\\udcff)"),
    ("--metric-version", "1\u0000", "version: text contains a NUL character"),
])
def test_a_file_wide_field_the_database_cannot_store_is_refused_by_the_command_naming_it(
        captioned, tmp_path, option, value, said):
    """A byte that is not UTF-8 in an argument reaches Python as a lone surrogate."""
    path = tmp_path / "scores.jsonl"
    path.write_text(score() + "\n", encoding="utf-8")
    arguments = {"--metric": "vlm_defects", "--direction": "lower", "--metric-version": "1",
                 "--source": "judge", option: value}
    err = io.StringIO()
    with pytest.raises(CommandError, match="nothing was stored"):
        call_command("import_scores", str(path), "--study", "s1",
                     *[item for pair in arguments.items() for item in pair],
                     stdout=io.StringIO(), stderr=err)
    [problem] = err.getvalue().splitlines()
    assert said in problem and problem.endswith("(given for the whole file)")
    assert not ExternalScore.objects.exists()


@pytest.mark.parametrize(("size", "said"), [
    (1_100_000, "The upload is 1.1 MB"),  # refused from its length, before the body is read
    (1_010_000, "scores.jsonl is 1.01 MB"),  # refused once the file's size is known
])
def test_a_score_file_over_the_limit_is_refused_with_413_naming_it(
        captioned, personas, settings, size, said):
    settings.MAX_IMPORT_FILE_MB = 1
    response = post(personas["admin"], b"x" * size)
    assert response.status_code == 413, response.content[:300]
    assert said in response.json()["detail"]
    assert response.json()["detail"].endswith(
        "files imported here may be at most 1 MB (MAX_IMPORT_FILE_MB).")


def test_the_command_refuses_a_score_file_over_the_limit_before_reading_it(
        captioned, tmp_path, settings):
    settings.MAX_IMPORT_FILE_MB = 1
    path = tmp_path / "scores.jsonl"
    with path.open("wb") as file:  # 110 MB on disk, written sparse: nothing is read or held
        file.truncate(110_000_000)
    with pytest.raises(CommandError) as refused:
        call_command("import_scores", str(path), "--study", "s1", stdout=io.StringIO(),
                     stderr=io.StringIO())
    assert str(refused.value) == (f"{path} is 110 MB; files imported here may be at most 1 MB "
                                  "(MAX_IMPORT_FILE_MB).")


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_the_database_refuses_a_score_that_is_not_finite(captioned, value):
    from django.db import IntegrityError, transaction
    from django.utils import timezone

    from annotation.models import Caption

    caption = Caption.objects.filter(clip__study=captioned).first()
    with pytest.raises(IntegrityError), transaction.atomic():
        ExternalScore.objects.create(study=captioned, caption=caption, metric="m", direction="lower",
                                     version="1", source="s", value=value, imported_at=timezone.now())
    # The largest finite float is a score.
    ExternalScore.objects.create(study=captioned, caption=caption, metric="m", direction="lower",
                                 version="1", source="s", value=1.7976931348623157e308,
                                 imported_at=timezone.now())
