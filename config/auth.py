"""Django's model backend, each request's user read by a prepared read.

Every signed-in request reads its user by the id its session holds; building that statement
was a tenth of an autosave's CPU. This backend reads it with :mod:`annotation.prepared` and
does everything else as Django's ModelBackend does (passwords, permissions, inactive users).
"""

from __future__ import annotations

from django.contrib.auth import backends, get_user_model

from annotation.prepared import prepared

# This backend's path, as settings.AUTHENTICATION_BACKENDS and a session name it.
BACKEND = "config.auth.ModelBackend"
# Django's own, which sessions signed in before this backend name (config.sessions reads them as
# this one's: the same users, found the same way).
DJANGO_BACKEND = "django.contrib.auth.backends.ModelBackend"


@prepared
def _user_read(*, user_id: int):
    return get_user_model()._default_manager.filter(pk=user_id)


class ModelBackend(backends.ModelBackend):
    def get_user(self, user_id):
        """The active user with this id, or None (as ModelBackend). Django hands over the id
        already made an integer by the user model's primary key."""
        user = next(iter(_user_read(user_id=user_id)), None)
        return user if user is not None and self.user_can_authenticate(user) else None
