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


def session_of(user_id, backend: str) -> Client:
    """A browser holding a session stored by hand, signed in by `backend` as `user_id`."""
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.auth.models import User

    from config.sessions import SessionStore

    session = SessionStore()
    session[SESSION_KEY] = str(user_id)
    session[BACKEND_SESSION_KEY] = backend
    found = User.objects.filter(pk=user_id).first()
    session[HASH_SESSION_KEY] = found.get_session_auth_hash() if found else ""
    session.create()
    client = Client()
    client.cookies[settings.SESSION_COOKIE_NAME] = session.session_key
    return client


def test_sessions_signed_in_by_django_s_own_backend_still_sign_in(personas):
    """Sessions made before config.auth name Django's ModelBackend: their people stay signed in."""
    from config.auth import BACKEND, DJANGO_BACKEND

    assert settings.AUTHENTICATION_BACKENDS == [BACKEND]
    for backend in (DJANGO_BACKEND, BACKEND):
        client = session_of(personas["annotator"].pk, backend)
        assert client.get(PAGE).status_code == 200, backend
        assert client.get("/api/studies/s1/my-queue/").status_code == 200, backend
    assert session_of(personas["annotator"].pk, "elsewhere.Backend").get(PAGE).status_code == 302


def test_a_session_whose_user_is_gone_signs_nobody_in(personas):
    for user_id in (10**9, 2**70):
        assert session_of(user_id, "config.auth.ModelBackend").get(PAGE).status_code == 302, user_id


def test_a_request_reads_its_session_and_its_person_in_one_statement(personas):
    """The session's row comes with its person's (config.sessions); nobody is read again."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = signed_in(personas["annotator"], "pw-annotator")
    key = client.cookies[settings.SESSION_COOKIE_NAME].value
    from annotation.models import SignedInSession

    assert SignedInSession.objects.get(session_key=key).user_id == personas["annotator"].pk
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/api/studies/s1/my-queue/").status_code == 200
    people = [q["sql"] for q in queries.captured_queries if '"auth_user"' in q["sql"]]
    assert len(people) == 1 and '"django_session"' in people[0], people


def test_the_session_s_data_decides_who_is_signed_in_not_the_column(personas):
    """A column naming someone else (written by hand, or a row of an older copy) signs nobody
    in as them: the person the data names is read and checked against the password, as before."""
    from annotation.models import SignedInSession

    client = signed_in(personas["annotator"], "pw-annotator")
    key = client.cookies[settings.SESSION_COOKIE_NAME].value
    SignedInSession.objects.filter(session_key=key).update(user_id=personas["admin"].pk)
    assert who(client) == personas["annotator"].username
    SignedInSession.objects.filter(session_key=key).update(user_id=None)  # as Django's own store writes it
    assert who(client) == personas["annotator"].username
    personas["annotator"].set_password("a-new-password-1")
    personas["annotator"].save()
    assert client.get(PAGE).status_code == 302


def test_a_session_signed_in_then_out_and_in_again_names_each_person(personas):
    client = signed_in(personas["annotator"], "pw-annotator")
    client.post("/logout/")
    assert client.post("/login/", {"username": personas["reviewer"].username,
                                   "password": "pw-reviewer"}).status_code == 302
    from annotation.models import SignedInSession

    key = client.cookies[settings.SESSION_COOKIE_NAME].value
    assert SignedInSession.objects.get(session_key=key).user_id == personas["reviewer"].pk
    assert who(client) == personas["reviewer"].username


def test_the_migration_gives_the_sessions_already_open_their_person(personas):
    """Sessions written before the column (by Django's own store here) get it from their data;
    an expired one, or one that signs nobody in, is left as it is."""
    from datetime import timedelta
    from importlib import import_module
    from types import SimpleNamespace

    from django.apps import apps
    from django.contrib.auth import SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore as DjangoStore
    from django.db import connection
    from django.utils import timezone

    from annotation.models import SignedInSession

    keys = {}
    for name, data in (("signed in", {SESSION_KEY: str(personas["annotator"].pk)}), ("anonymous", {"x": 1}),
                       ("odd id", {SESSION_KEY: "²"}), ("expired", {SESSION_KEY: str(personas["admin"].pk)})):
        store = DjangoStore()
        store.update(data)
        store.create()
        keys[name] = store.session_key
    SignedInSession.objects.filter(pk=keys["expired"]).update(expire_date=timezone.now() - timedelta(days=1))
    migration = import_module("annotation.migrations.0039_signed_in_sessions")
    migration.fill_signed_in_ids(apps, SimpleNamespace(connection=connection))  # all it uses of a schema editor
    found = dict(SignedInSession.objects.filter(pk__in=keys.values()).values_list("pk", "user_id"))
    assert {name: found[key] for name, key in keys.items()} == {
        "signed in": personas["annotator"].pk, "anonymous": None, "odd id": None, "expired": None}


def who(client: Client) -> str:
    """Whom the client's session signs in, as the request saw it."""
    return client.get(PAGE).wsgi_request.user.username
