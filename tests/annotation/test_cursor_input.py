"""A page cursor is read by the one JSON reader: whatever a client sends as ``after`` answers
400 saying the cursor is not one the server gave out, never a server error."""

from __future__ import annotations

import base64

import pytest
from rest_framework.test import APIClient

from annotation.selectors.queues import BadCursor, decode_cursor, encode_cursor


def cursor_of(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


UNREADABLE = {
    "100,000 nested brackets": "[" * 100_000 + "]" * 100_000,
    "5,000 digits": "[" + "7" * 5_000 + ", 1, 2]",
    "1 followed by 400 zeros": "[1" + "0" * 400 + ", 1, 2]",
    "NaN": "[NaN, 1, 2]",
    "a NUL": '["\\u0000", 1, 2]',
}


@pytest.mark.parametrize("text", UNREADABLE.values(), ids=UNREADABLE.keys())
def test_an_unreadable_cursor_is_refused_as_one_the_server_did_not_give(text):
    with pytest.raises(BadCursor, match="not one this server gave out"):
        decode_cursor(cursor_of(text), size=3)


def test_a_cursor_the_server_gave_is_read_back():
    assert decode_cursor(encode_cursor([0.5, "2026-01-01T00:00:00", 7]), size=3) == [
        0.5, "2026-01-01T00:00:00", 7]


@pytest.mark.django_db
@pytest.mark.parametrize("text", UNREADABLE.values(), ids=UNREADABLE.keys())
def test_the_review_queue_answers_400_to_an_unreadable_cursor(study, personas, text):
    client = APIClient()
    client.force_authenticate(personas["reviewer"])
    client.raise_request_exception = False
    response = client.get(f"/api/studies/s1/review-queue/?after={cursor_of(text)}")
    assert response.status_code == 400 and "cursor" in response.json()["detail"]
