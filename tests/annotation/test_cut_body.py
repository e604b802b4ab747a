"""A request whose body the client cut short (the soak's mid-body disconnect) is a 400 naming it,
not a server error in the log. The CSRF check reads a POST's body first and swallows the error
(Django's CsrfViewMiddleware catches UnreadablePostError), so a JSON endpoint's view then met
RawPostDataException: an HTML 500 that nobody saw but the log (the 5-minute soak logged one)."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.test import Client

from annotation.middleware import BODY_CUT

pytestmark = pytest.mark.django_db
TOKEN = "c" * 32


class CutStream:
    """A request body whose client went away after the headers: reading it fails, as
    gunicorn's does."""

    def read(self, *args):
        raise ConnectionResetError(104, "Connection reset by peer")

    readline = read


def cut_post(client: Client, path: str):
    return client.generic("POST", path, data=b'{"base_version": 1, "replies": {}}', content_type="application/json",
                          **{"wsgi.input": CutStream(), "HTTP_X_CSRFTOKEN": TOKEN})


@pytest.fixture
def signed_in(personas):
    client = Client(enforce_csrf_checks=True)  # as a browser's session, CSRF header and all
    client.force_login(personas["annotator"])
    client.cookies[settings.CSRF_COOKIE_NAME] = TOKEN
    return client


@pytest.mark.parametrize("path", ["/api/annotations/1/submit/", "/api/annotations/1/lock-overview/",
                                  "/api/studies/s1/my-queue/next/"])
def test_a_json_body_cut_short_is_a_400_naming_it(signed_in, path):
    response = cut_post(signed_in, path)
    assert response.status_code == 400
    assert response.json() == {"detail": BODY_CUT}


def test_a_whole_body_still_reaches_the_view(signed_in):
    response = signed_in.post("/api/annotations/999999/submit/", b'{"base_version": 1}',
                              content_type="application/json", HTTP_X_CSRFTOKEN=TOKEN)
    assert response.status_code == 404  # the view read it: no such annotation
