"""Sessions are read through Django's cache (cached_db, config/settings.py) and written to the
database and the cache alike: whatever ends a session or a person's access is seen by the very
next request, never a stale copy from the cache."""

import pytest
from django.conf import settings
from django.contrib.sessions.models import Session
from django.core.cache import cache
from django.test import Client

pytestmark = pytest.mark.django_db

PAGE = "/studies/s1/"


def signed_in(user, password: str) -> Client:
    client = Client()
    assert client.post("/login/", {"username": user.username, "password": password}).status_code == 302
    assert client.get(PAGE).status_code == 200
    return client


def same_cookie(client: Client) -> Client:
    """Another browser holding the same session cookie (as a copied cookie would be)."""
    other = Client()
    other.cookies[settings.SESSION_COOKIE_NAME] = client.cookies[settings.SESSION_COOKIE_NAME].value
    return other


def test_sessions_are_read_through_the_cache_and_kept_in_the_database(personas):
    client = signed_in(personas["annotator"], "pw-annotator")
    key = client.cookies[settings.SESSION_COOKIE_NAME].value
    assert settings.SESSION_ENGINE.endswith("cached_db")
    assert Session.objects.filter(session_key=key).exists()
    assert cache.get(f"django.contrib.sessions.cached_db{key}") is not None


def test_a_signed_out_session_is_not_read_back_from_the_cache(personas):
    client = signed_in(personas["annotator"], "pw-annotator")
    copy = same_cookie(client)
    assert copy.get(PAGE).status_code == 200
    client.post("/logout/")
    assert copy.get(PAGE).status_code == 302  # to the sign-in page


def test_a_deactivated_person_s_cached_session_no_longer_signs_them_in(personas):
    client = signed_in(personas["annotator"], "pw-annotator")
    personas["annotator"].is_active = False
    personas["annotator"].save()
    assert client.get(PAGE).status_code == 302


def test_a_changed_password_ends_the_other_cached_sessions(personas):
    client = signed_in(personas["annotator"], "pw-annotator")
    personas["annotator"].set_password("a-new-password-1")
    personas["annotator"].save()
    assert client.get(PAGE).status_code == 302


def test_a_session_lost_from_the_cache_is_read_from_the_database(personas):
    client = signed_in(personas["annotator"], "pw-annotator")
    cache.clear()
    assert client.get(PAGE).status_code == 200
