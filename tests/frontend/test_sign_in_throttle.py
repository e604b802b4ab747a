"""Sign-in throttling that a stranger cannot turn against an account's owner: counted per account
and address and per address, in the same fixed window with every cache backend, atomically under
parallel guesses, lifted by a new password, with the address taken from the trusted proxy hop."""

from __future__ import annotations

import threading
import time

import pytest
from django.contrib.auth.signals import user_login_failed
from django.db import connection
from django.test import Client

pytestmark = pytest.mark.django_db

SLOWED = "each address may try it once every"


@pytest.fixture
def limits(settings):
    settings.LOGIN_FAILURES_PER_ACCOUNT_AND_ADDRESS = 5
    settings.LOGIN_FAILURES_PER_ADDRESS = 20
    # As low as the per-address limit of one account: five guesses from anywhere (the attack
    # of the report) must not lock the owner out; the account is slowed instead.
    settings.LOGIN_FAILURES_PER_ACCOUNT = 5
    settings.LOGIN_SLOWED_SECONDS = 10
    return settings


def sign_in(username: str, password: str, address: str = "198.51.100.1", **headers):
    return Client(REMOTE_ADDR=address, **headers).post(
        "/login/", {"username": username, "password": password})


def page(answer) -> str:
    return answer.content.decode()


def test_failures_from_one_address_do_not_lock_the_owner_out_elsewhere(personas, limits):
    for _ in range(5):
        sign_in("annotator", "guess", address="203.0.113.66")
    # The owner, from their own address, signs in with the right password.
    assert sign_in("annotator", "pw-annotator", address="198.51.100.7").status_code == 302
    locked = sign_in("annotator", "pw-annotator", address="203.0.113.66")
    assert "Too many failed sign-ins for this account from your address" in page(locked)


def test_a_sign_in_without_a_password_between_guesses_does_not_clear_them(personas, limits):
    for _ in range(4):
        sign_in("annotator", "guess")
        assert sign_in("annotator", "").status_code == 200  # "This field is required."
    sign_in("annotator", "guess")
    assert "Too many failed sign-ins for this account" in page(sign_in("annotator", "guess"))


def test_a_new_password_lifts_the_accounts_limits(personas, limits):
    for _ in range(5):
        sign_in("annotator", "guess")
    assert "Too many failed" in page(sign_in("annotator", "pw-annotator"))
    personas["annotator"].set_password("a-new-password")
    personas["annotator"].save()
    assert sign_in("annotator", "a-new-password").status_code == 302


def test_guesses_spread_over_many_addresses_slow_the_account_but_the_right_password_gets_in(
    personas, limits
):
    limits.LOGIN_FAILURES_PER_ACCOUNT = 12
    for n in range(12):  # 12 addresses, one guess each: none reaches its own limit
        sign_in("annotator", "guess", address=f"203.0.113.{n}")
    assert sign_in("annotator", "pw-annotator", address="198.51.100.7").status_code == 302
    # Each address may now try once every LOGIN_SLOWED_SECONDS.
    assert sign_in("annotator", "guess", address="203.0.113.99").status_code == 200
    slowed = sign_in("annotator", "guess", address="203.0.113.99")
    assert SLOWED in page(slowed) and "Wait 10 seconds" in page(slowed)
    # Other accounts are not slowed.
    assert sign_in("reviewer", "pw-reviewer", address="203.0.113.99").status_code == 302


def test_a_spoofed_first_forwarded_for_entry_does_not_escape_the_address_limit(personas, limits):
    limits.CLIENT_ADDRESS_HEADER = "HTTP_X_FORWARDED_FOR"
    limits.TRUSTED_PROXY_COUNT = 1
    for n in range(20):  # the proxy appends the real address; the client writes the rest
        sign_in(f"nobody{n}", "guess", address="10.0.0.1",
                HTTP_X_FORWARDED_FOR=f"192.0.2.{n}, 203.0.113.7")
    locked = sign_in("admin", "pw-admin", address="10.0.0.1",
                     HTTP_X_FORWARDED_FOR="192.0.2.250, 203.0.113.7")
    assert "Too many failed sign-ins from your address" in page(locked)
    other = sign_in("admin", "pw-admin", address="10.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.8")
    assert other.status_code == 302


def test_with_two_trusted_proxies_the_address_is_the_one_the_outer_proxy_saw(personas, limits):
    limits.CLIENT_ADDRESS_HEADER = "HTTP_X_FORWARDED_FOR"
    limits.TRUSTED_PROXY_COUNT = 2
    for n in range(20):
        sign_in(f"nobody{n}", "guess", address="10.0.0.1",
                HTTP_X_FORWARDED_FOR=f"192.0.2.{n}, 203.0.113.7, 10.0.0.2")
    locked = sign_in("admin", "pw-admin", address="10.0.0.1",
                     HTTP_X_FORWARDED_FOR="203.0.113.7, 10.0.0.2")
    assert "from your address" in page(locked)


# ------------------------------------------------------------------ the window, with every cache


@pytest.fixture(params=["files", "redis"])
def each_cache(request, settings, tmp_path):
    if request.param == "redis":
        location = settings.CELERY_BROKER_URL if settings.CELERY_BROKER_URL.startswith("redis://") \
            else "redis://127.0.0.1:6379/3"
        settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                       "LOCATION": location, "KEY_PREFIX": f"rel-test-{tmp_path.name}"}}
    return request.param


def test_the_window_is_fixed_from_the_first_failure_with_every_cache_backend(
    personas, limits, each_cache
):
    """Not extended by tries during it, and not the backend's default timeout (300 s)."""
    limits.LOGIN_FAILURE_WINDOW_SECONDS = 3
    limits.LOGIN_FAILURES_PER_ADDRESS = 5
    first = time.monotonic()
    for n in range(5):
        sign_in(f"nobody{n}", "guess")
    time.sleep(max(0.0, first + 1.5 - time.monotonic()))
    assert "from your address" in page(sign_in("nobody9", "guess"))
    assert time.monotonic() < first + 3, "the machine is too slow for this test's timing"
    time.sleep(max(0.0, first + 3.3 - time.monotonic()))
    assert sign_in("annotator", "pw-annotator").status_code == 302


# ------------------------------------------------------------------ parallel guesses


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_twelve_parallel_guesses_check_at_most_the_limits_passwords(personas, limits):
    checked: list[str] = []
    lock = threading.Lock()

    def count(sender, credentials, **kwargs):
        with lock:
            checked.append(credentials.get("username", ""))

    user_login_failed.connect(count)
    start = threading.Barrier(12)
    answers: list[int] = []

    def guess(n: int) -> None:
        try:
            start.wait(timeout=30)
            answers.append(sign_in("annotator", f"guess-{n}").status_code)
        except Exception as error:  # noqa: BLE001 - reported by the assertion below
            answers.append(repr(error))
        finally:
            connection.close()

    try:
        threads = [threading.Thread(target=guess, args=(n,)) for n in range(12)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
    finally:
        user_login_failed.disconnect(count)
    assert answers == [200] * 12
    assert len(checked) == 5
