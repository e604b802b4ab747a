"""The clip endpoint: members only, ranged, and handed to nginx when configured."""

import pytest

pytestmark = pytest.mark.django_db


@pytest.fixture
def member(client, personas):
    client.force_login(personas["annotator"])
    return client


def test_member_gets_the_whole_clip_without_range(member, clips):
    response = member.get(f"/clips/{clips['a'].pk}/video")
    assert response.status_code == 200
    assert response["Content-Type"] == "video/mp4"
    assert int(response["Content-Length"]) == clips["a"].size_bytes
    assert response["Accept-Ranges"] == "bytes" and response["ETag"] and response["Last-Modified"]


def test_member_gets_a_byte_range(member, clips):
    response = member.get(f"/clips/{clips['a'].pk}/video", HTTP_RANGE="bytes=10-19")
    assert response.status_code == 206
    assert response["Content-Range"] == f"bytes 10-19/{clips['a'].size_bytes}"
    body = b"".join(response.streaming_content)
    assert body == clips["a"].original.open("rb").read()[10:20]


def test_suffix_range_returns_the_last_bytes(member, clips):
    size = clips["a"].size_bytes
    response = member.get(f"/clips/{clips['a'].pk}/video", HTTP_RANGE="bytes=-100")
    assert response.status_code == 206
    assert response["Content-Range"] == f"bytes {size - 100}-{size - 1}/{size}"


def test_range_past_the_end_is_416(member, clips):
    size = clips["a"].size_bytes
    response = member.get(f"/clips/{clips['a'].pk}/video", HTTP_RANGE=f"bytes={size + 5}-")
    assert response.status_code == 416
    assert response["Content-Range"] == f"bytes */{size}"


def test_a_range_with_a_five_thousand_digit_number_is_416_not_a_server_error(member, clips):
    size = clips["a"].size_bytes
    response = member.get(f"/clips/{clips['a'].pk}/video", HTTP_RANGE=f"bytes={'9' * 5000}-")
    assert response.status_code == 416 and response["Content-Range"] == f"bytes */{size}"
    clipped = member.get(f"/clips/{clips['a'].pk}/video", HTTP_RANGE=f"bytes=0-{'9' * 5000}")
    assert clipped.status_code == 206
    assert clipped["Content-Range"] == f"bytes 0-{size - 1}/{size}"


def test_outsider_gets_404_and_anonymous_is_sent_to_sign_in(client, personas, clips):
    client.force_login(personas["outsider"])
    assert client.get(f"/clips/{clips['a'].pk}/video").status_code == 404
    client.logout()
    response = client.get(f"/clips/{clips['a'].pk}/video")
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_behind_nginx_the_endpoint_answers_with_x_accel_redirect(member, clips, settings):
    settings.MEDIA_X_ACCEL_REDIRECT = True
    response = member.get(f"/clips/{clips['a'].pk}/video")
    assert response["X-Accel-Redirect"] == "/protected-media/" + clips["a"].original.name
    assert response.content == b""
