"""Sessions live in the database (config/settings.py), not behind the cache: whatever ends a
session or a person's access is seen by the very next request, and a cache (Redis) that does not
answer neither stops anyone signing in nor fails their requests."""

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


def test_sessions_are_kept_in_the_database_not_in_the_cache(personas):
    client = signed_in(personas["annotator"], "pw-annotator")
    key = client.cookies[settings.SESSION_COOKIE_NAME].value
    assert Session.objects.filter(session_key=key).exists()
    assert cache.get(f"django.contrib.sessions.cached_db{key}") is None


def test_people_sign_in_and_work_while_the_cache_does_not_answer(personas, settings):
    """Redis stopped: the cache is a port where nothing listens."""
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                   "LOCATION": "redis://127.0.0.1:9/1"}}
    # (Django's test signals give the cache handler the new settings and drop the old clients.)
    client = signed_in(personas["annotator"], "pw-annotator")
    assert client.get(PAGE).status_code == 200
    client.post("/logout/")
    assert client.get(PAGE).status_code == 302


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


def test_an_expired_session_signs_nobody_in_and_a_live_one_reads_as_django_wrote_it(personas):
    """config.sessions reads with a prepared read: the expiry is compared at each request, and
    the data is what Django's own database store reads."""
    from datetime import timedelta

    from django.contrib.sessions.backends.db import SessionStore as DjangoStore
    from django.utils import timezone

    from config.sessions import SessionStore

    client = signed_in(personas["annotator"], "pw-annotator")
    key = client.cookies[settings.SESSION_COOKIE_NAME].value
    assert SessionStore(key).load() == DjangoStore(key).load() != {}
    Session.objects.filter(session_key=key).update(expire_date=timezone.now() - timedelta(seconds=1))
    assert client.get(PAGE).status_code == 302
    store = SessionStore(key)
    assert store.load() == {} and store.session_key is None
