"""Django's database sessions, each request's session read by a prepared read.

Every request reads its session by its key; building that statement was a tenth of an autosave's
CPU. This store reads it with :mod:`annotation.prepared` and does everything else as Django's
database store does (same table, same format: the two read each other's sessions).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import BACKEND_SESSION_KEY
from django.contrib.sessions.backends import db
from django.contrib.sessions.models import Session
from django.utils import timezone

from annotation.prepared import prepared
from config.auth import BACKEND, DJANGO_BACKEND


@prepared
def _session_read(*, session_key: str, now):
    return Session.objects.filter(session_key=session_key, expire_date__gt=now).values("session_data")


class SessionStore(db.SessionStore):
    def load(self) -> dict[str, Any]:
        """The session's data; {} and no key when it is unknown or expired (as Django's store)."""
        rows = _session_read(session_key=self.session_key, now=timezone.now())
        if not rows:
            self._session_key = None
            return {}
        data = self.decode(rows[0]["session_data"])
        if data.get(BACKEND_SESSION_KEY) == DJANGO_BACKEND:  # signed in before config.auth
            data[BACKEND_SESSION_KEY] = BACKEND
        return data
