"""Django's model backend, each request's user the one read with its session.

Every signed-in request needs the person its session signs in. config.sessions reads that
person's row in the same statement as the session; this backend takes it from there when it is
the person the session's data names, and otherwise reads them by id (a prepared read,
:mod:`annotation.prepared`). Everything else is Django's: ModelBackend (passwords, permissions,
inactive users) and django.contrib.auth.get_user, which checks the session against the person's
password before signing them in.
"""

from __future__ import annotations

from contextvars import ContextVar

from django.contrib import auth
from django.contrib.auth import backends, get_user_model
from django.contrib.auth import middleware as auth_middleware
from django.utils.functional import SimpleLazyObject

from annotation.prepared import prepared

# This backend's path, as settings.AUTHENTICATION_BACKENDS and a session name it.
BACKEND = "config.auth.ModelBackend"
# Django's own, which sessions signed in before this backend name (config.sessions reads them as
# this one's: the same users, found the same way).
DJANGO_BACKEND = "django.contrib.auth.backends.ModelBackend"

# The session of the request whose user is being found (AuthenticationMiddleware below).
_session_of_request: ContextVar = ContextVar("session of the request", default=None)


@prepared
def _user_read(*, user_id: int):
    return get_user_model()._default_manager.filter(pk=user_id)


class ModelBackend(backends.ModelBackend):
    def get_user(self, user_id):
        """The active user with this id, or None (as ModelBackend). Django hands over the id
        already made an integer by the user model's primary key."""
        user = getattr(_session_of_request.get(), "person_read", None)
        if user is None or user.pk != user_id:
            user = next(iter(_user_read(user_id=user_id)), None)
        return user if user is not None and self.user_can_authenticate(user) else None


def _user_of(request):
    """django.contrib.auth.get_user(request), with the request's session at hand for the backend."""
    if not hasattr(request, "_cached_user"):
        known = _session_of_request.set(request.session)
        try:
            request._cached_user = auth.get_user(request)
        finally:
            _session_of_request.reset(known)
    return request._cached_user


class AuthenticationMiddleware(auth_middleware.AuthenticationMiddleware):
    """Django's, finding the request's user with the person read with its session."""

    def process_request(self, request):
        super().process_request(request)
        request.user = SimpleLazyObject(lambda: _user_of(request))
