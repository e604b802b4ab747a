"""Sign-in throttling: too many failed sign-ins for one account, or from one address, and further
tries are refused (even with the right password) until the window has passed.

The counts live in Django's cache (``CACHES``; Redis in production, see README), so every web
process sees the same counts. Limits: ``LOGIN_FAILURES_PER_ACCOUNT``,
``LOGIN_FAILURES_PER_ADDRESS`` within ``LOGIN_FAILURE_WINDOW_SECONDS``.
"""

from __future__ import annotations

import hashlib

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import cache


def client_address(request) -> str:
    """The browser's address: from the header the proxy sets (``CLIENT_ADDRESS_HEADER``, e.g.
    ``HTTP_X_REAL_IP`` behind nginx) when configured, else the connection's."""
    header = settings.CLIENT_ADDRESS_HEADER
    value = request.META.get(header, "") if header else ""
    return value.split(",")[0].strip() or request.META.get("REMOTE_ADDR", "")


def _keys(username: str, address: str) -> tuple[str, str]:
    account = hashlib.sha256(username.strip().casefold().encode()).hexdigest()
    return f"login-failures:account:{account}", f"login-failures:address:{address}"


def login_refused(*, username: str, address: str) -> str | None:
    """Why a sign-in must not even be tried now, or None."""
    account_key, address_key = _keys(username, address)
    minutes = max(1, settings.LOGIN_FAILURE_WINDOW_SECONDS // 60)
    if cache.get(account_key, 0) >= settings.LOGIN_FAILURES_PER_ACCOUNT:
        return (f"Too many failed sign-ins for this account. Wait {minutes} minutes and try "
                "again, or ask an admin to set a new password.")
    if cache.get(address_key, 0) >= settings.LOGIN_FAILURES_PER_ADDRESS:
        return f"Too many failed sign-ins from your address. Wait {minutes} minutes and try again."
    return None


def login_failure_record(*, username: str, address: str) -> None:
    """Count one failed sign-in against the account and the address."""
    for key in _keys(username, address):
        # add() starts the window only for the first failure; incr() keeps its expiry.
        cache.add(key, 0, timeout=settings.LOGIN_FAILURE_WINDOW_SECONDS)
        try:
            cache.incr(key)
        except ValueError:  # expired between add() and incr()
            cache.add(key, 1, timeout=settings.LOGIN_FAILURE_WINDOW_SECONDS)


def login_success_record(*, username: str, address: str) -> None:
    """A successful sign-in clears the account's count (not the address's)."""
    cache.delete(_keys(username, address)[0])


class ThrottledSignIn:
    """Mixin for Django's sign-in forms: refuse while throttled, count failures."""

    def clean(self):
        username = self.data.get("username", "") or ""
        address = client_address(self.request) if self.request else ""
        refused = login_refused(username=username, address=address)
        if refused:
            raise forms.ValidationError(refused, code="throttled")
        try:
            cleaned = super().clean()
        except forms.ValidationError:
            login_failure_record(username=username, address=address)
            raise
        login_success_record(username=username, address=address)
        return cleaned


class SignInForm(ThrottledSignIn, AuthenticationForm):
    pass


class AdminSignInForm(ThrottledSignIn, AdminAuthenticationForm):
    pass
