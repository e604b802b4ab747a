"""People as pseudonyms: ``person-`` and 12 hex digits of an HMAC (SHA-256) of the account's id,
keyed with the study's own ``release_secret``. A person keeps their pseudonym in every release of
the study and on its pages for researchers (the annotator quality page, the work log), so what a
researcher reads on a page can be found in the release; the pseudonyms of two studies cannot be
linked, and nobody without the secret can tell who is who. Pure: no Django."""

from __future__ import annotations

import hashlib
import hmac


def pseudonym(secret: str, user_id: int) -> str:
    """A person's stable pseudonym in one study (keyed hash; see the module)."""
    digest = hmac.new(secret.encode("ascii"), f"user:{user_id}".encode("ascii"), hashlib.sha256)
    return f"person-{digest.hexdigest()[:12]}"
