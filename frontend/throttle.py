"""Sign-in throttling that a stranger cannot turn against an account's owner.

Failed sign-ins are counted in fixed windows of ``LOGIN_FAILURE_WINDOW_SECONDS`` from the first
failure, in the database (one table, shared by every web process, whatever the cache backend):

- per account and address (``LOGIN_FAILURES_PER_ACCOUNT_AND_ADDRESS``): that address may not try
  that account again until the window has passed. The owner, elsewhere, still signs in;
- per address (``LOGIN_FAILURES_PER_ADDRESS``): that address may not try any account;
- per account (``LOGIN_FAILURES_PER_ACCOUNT``, far above what one address may reach, against
  guessing spread over many addresses): sign-ins to the account are *slowed*, not refused: each
  address may try once every ``LOGIN_SLOWED_SECONDS``; the right password still gets in.

A try is counted before its password is checked, under a row lock, so that parallel guesses check
no more passwords than the limit; a successful one gives its count back. The account's keys include
a digest of its password hash: a new password (reset, change, an admin's) lifts its limits.
Behind proxies the address is the one the right-most trusted proxy saw (``CLIENT_ADDRESS_HEADER``,
``TRUSTED_PROXY_COUNT``): entries a client writes itself into X-Forwarded-For are ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import AuthenticationForm
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.crypto import salted_hmac

from frontend.models import SignInCount


def client_address(request) -> str:
    """The browser's address. Without ``CLIENT_ADDRESS_HEADER``, the connection's. With it (e.g.
    ``HTTP_X_REAL_IP`` or ``HTTP_X_FORWARDED_FOR``), the entry written by the right-most of the
    ``TRUSTED_PROXY_COUNT`` proxies in front: each proxy appends the address it was reached from,
    so entries further left are whatever the client sent."""
    header = settings.CLIENT_ADDRESS_HEADER
    hops = [hop.strip() for hop in request.META.get(header, "").split(",")] if header else []
    hops = [hop for hop in hops if hop]
    if hops:
        return hops[-min(max(1, settings.TRUSTED_PROXY_COUNT), len(hops))]
    return request.META.get("REMOTE_ADDR", "")


def _digest(*parts: str) -> str:
    return salted_hmac("redline.sign-in-throttle", "\x00".join(parts)).hexdigest()[:64]


def _account(username: str) -> str:
    """The account as the throttle knows it: its name and its current password hash."""
    User = get_user_model()
    password = (User._default_manager.filter(**{User.USERNAME_FIELD: username})
                .values_list("password", flat=True).first()) or ""
    return _digest("account", username.strip().casefold(), password)


@dataclass(frozen=True)
class ThrottleKeys:
    """The counts one try touches. Made once per try: a successful sign-in may rehash the
    password, which would change the account's keys."""

    pair: str
    address: str
    account: str
    slowed: str


def throttle_keys(*, username: str, address: str) -> ThrottleKeys:
    account = _account(username)
    return ThrottleKeys(pair=_digest("pair", account, address), address=_digest("address", address),
                        account=account, slowed=_digest("slowed", account, address))


def _ensure(keys: list[str], now: datetime) -> None:
    """Create the rows of `keys` that are missing, each insert committed at once: creating them
    inside the locking transaction would lock in another order than :func:`_locked` does."""
    SignInCount.objects.bulk_create(
        [SignInCount(key=key, window_start=now, count=0) for key in keys], ignore_conflicts=True)


def _locked(keys: list[str], now: datetime) -> dict[str, SignInCount]:
    """The rows of `keys` (made by :func:`_ensure` before the transaction), locked in key order
    until the transaction ends: parallel tries wait for each other instead of deadlocking."""
    rows = {row.key: row for row in
            SignInCount.objects.select_for_update().filter(key__in=keys).order_by("key")}
    for key in sorted(set(keys) - set(rows)):  # removed meanwhile as long expired: rare
        try:
            with transaction.atomic():
                rows[key] = SignInCount.objects.create(key=key, window_start=now, count=0)
        except IntegrityError:
            rows[key] = SignInCount.objects.select_for_update().get(key=key)
    return rows


def _current(row: SignInCount, now: datetime, seconds: int) -> int:
    """The row's count in its window; a window that has passed starts again from now."""
    if row.window_start <= now - timedelta(seconds=seconds):
        row.window_start, row.count = now, 0
    return row.count


def _minutes() -> int:
    return max(1, -(-settings.LOGIN_FAILURE_WINDOW_SECONDS // 60))


def sign_in_reserve(keys: ThrottleKeys) -> str | None:
    """Count this try before its password is checked; why it must not be tried, or None.

    A refused try counts for nothing. An accepted one counts against the account at this address
    and against the address until :func:`sign_in_succeeded` gives it back."""
    window = settings.LOGIN_FAILURE_WINDOW_SECONDS
    now = timezone.now()
    wanted = [keys.pair, keys.address, keys.account, keys.slowed]
    _ensure(wanted, now)
    with transaction.atomic():
        rows = _locked(wanted, now)
        pair, by_address = (_current(rows[keys.pair], now, window),
                            _current(rows[keys.address], now, window))
        if pair >= settings.LOGIN_FAILURES_PER_ACCOUNT_AND_ADDRESS:
            return (f"Too many failed sign-ins for this account from your address. Wait {_minutes()} "
                    "minutes and try again, or ask an admin to set a new password.")
        if by_address >= settings.LOGIN_FAILURES_PER_ADDRESS:
            return (f"Too many failed sign-ins from your address. Wait {_minutes()} minutes and try "
                    "again.")
        if _current(rows[keys.account], now, window) >= settings.LOGIN_FAILURES_PER_ACCOUNT:
            slowed = rows[keys.slowed]
            seconds = settings.LOGIN_SLOWED_SECONDS
            if _current(slowed, now, seconds) >= 1:
                wait = seconds - (now - slowed.window_start).total_seconds()
                return (f"This account has had many failed sign-ins from many addresses, so each "
                        f"address may try it once every {seconds} seconds. Wait {max(1, round(wait))} "
                        "seconds and try again.")
            slowed.window_start, slowed.count = now, 1
            slowed.save()
        for row in (rows[keys.pair], rows[keys.address]):
            row.count += 1
            row.save()
        rows[keys.account].save()  # its window, started again if it had passed
    return None


def sign_in_failed(keys: ThrottleKeys) -> None:
    """The reserved try failed: it stays counted, and counts against the account everywhere."""
    now = timezone.now()
    _ensure([keys.account], now)
    with transaction.atomic():
        row = _locked([keys.account], now)[keys.account]
        _current(row, now, settings.LOGIN_FAILURE_WINDOW_SECONDS)
        row.count += 1
        row.save()
    # Counts whose windows passed long ago are of no use.
    longest = max(settings.LOGIN_FAILURE_WINDOW_SECONDS, settings.LOGIN_SLOWED_SECONDS)
    SignInCount.objects.filter(window_start__lt=now - timedelta(seconds=2 * longest)).delete()


def sign_in_succeeded(keys: ThrottleKeys) -> None:
    """The reserved try signed in: the account's failures at this address are cleared and the
    address's count gets the try back."""
    now = timezone.now()
    _ensure([keys.pair, keys.address], now)
    with transaction.atomic():
        rows = _locked([keys.pair, keys.address], now)
        rows[keys.pair].delete()
        address = rows[keys.address]
        address.count = max(0, address.count - 1)
        address.save()


def sign_in_released(keys: ThrottleKeys) -> None:
    """The reserved try checked no password (a field was missing): it counts for nothing."""
    now = timezone.now()
    _ensure([keys.pair, keys.address], now)
    with transaction.atomic():
        for row in _locked([keys.pair, keys.address], now).values():
            row.count = max(0, row.count - 1)
            row.save()


class ThrottledSignIn:
    """Mixin for Django's sign-in forms: refuse while throttled, count tries."""

    def clean(self):
        username = str(self.data.get("username", "") or "")[:300]
        address = client_address(self.request) if self.request else ""
        keys = throttle_keys(username=username, address=address)
        refused = sign_in_reserve(keys)
        if refused:
            raise forms.ValidationError(refused, code="throttled")
        try:
            cleaned = super().clean()
        except forms.ValidationError:
            sign_in_failed(keys)
            raise
        if self.get_user() is None:
            sign_in_released(keys)  # no password was checked: not a success that clears failures
        else:
            sign_in_succeeded(keys)
        return cleaned


class SignInForm(ThrottledSignIn, AuthenticationForm):
    pass


class AdminSignInForm(ThrottledSignIn, AdminAuthenticationForm):
    pass


def address_try(kind: str, address: str, *, limit: int, seconds: int) -> int | None:
    """Count one try of `kind` (e.g. opening a recruitment link) from `address`, in fixed windows
    of `seconds` from the first try, in the sign-in counts' table; the seconds to wait when the
    address already made `limit` tries in its window (the try is then not counted), else None."""
    key = _digest(kind, address)
    now = timezone.now()
    _ensure([key], now)
    with transaction.atomic():
        row = _locked([key], now)[key]
        if _current(row, now, seconds) >= limit:
            return max(1, round(seconds - (now - row.window_start).total_seconds()))
        row.count += 1
        row.save()
    return None
