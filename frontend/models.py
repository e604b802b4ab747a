"""What the pages keep for themselves: the sign-in throttle's counts (frontend/throttle.py)."""

from django.db import models


class SignInCount(models.Model):
    """Failed (or in-flight) sign-ins counted under one key, in a fixed window from `window_start`.

    The key is a hash: of an account (with its password, so that a new password starts afresh)
    and an address, of an address, or of an account alone."""

    key = models.CharField(max_length=64, primary_key=True)
    window_start = models.DateTimeField(db_index=True)
    count = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.key[:12]}: {self.count} since {self.window_start:%H:%M:%S}"
