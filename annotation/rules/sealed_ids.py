"""Participants' platform ids sealed at rest: AES-256-GCM (the `cryptography` library) under a
key derived with HKDF-SHA256 from two secrets kept apart, the site's SECRET_KEY (settings, never
in the database) and the study's own recruitment key (in the database). Neither alone opens a
sealed id: a copy of the database without the settings, or the settings without the database,
reads nothing. The study and the id's keyed hash are bound in as associated data, so a sealed
id copied onto another participant's row does not open. Pure: no Django.

A sealed id is ``v1:`` and the URL-safe base64 of a 12-byte nonce and the ciphertext with its tag.
"""

from __future__ import annotations

import base64
import os

# `cryptography` is imported where it is used: about 50 ms that the URL configuration, which
# every web worker loads, need not pay (only joining and the payment report seal or open ids).
VERSION = "v1"
NONCE_BYTES = 12
INFO = b"redline participant id v1"


def id_key(site_secret: str, study_secret: str) -> bytes:
    """The 256-bit key of one study's sealed ids, from the site's secret and the study's."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    return HKDF(algorithm=hashes.SHA256(), length=32, salt=study_secret.encode("utf-8"),
                info=INFO).derive(site_secret.encode("utf-8"))


def _bound(study: int, digest: str) -> bytes:
    return f"study:{study}:participant:{digest}".encode("ascii")


def seal(key: bytes, value: str, *, study: int, digest: str, nonce: bytes | None = None) -> str:
    """`value` sealed under `key`, bound to the study and the participant's hash."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    nonce = nonce if nonce is not None else os.urandom(NONCE_BYTES)
    sealed = AESGCM(key).encrypt(nonce, value.encode("utf-8"), _bound(study, digest))
    return f"{VERSION}:" + base64.urlsafe_b64encode(nonce + sealed).decode("ascii")


def unseal(keys: list[bytes], sealed: str, *, study: int, digest: str) -> str | None:
    """The value that `sealed` holds, opened by the first of `keys` that fits; None when there
    is nothing sealed, or no key opens it (another site secret, another row, a changed byte)."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    version, _, body = (sealed or "").partition(":")
    if version != VERSION or not body:
        return None
    try:
        raw = base64.urlsafe_b64decode(body.encode("ascii"))
    except (ValueError, UnicodeEncodeError):
        return None
    nonce, ciphertext = raw[:NONCE_BYTES], raw[NONCE_BYTES:]
    for key in keys:
        try:
            return AESGCM(key).decrypt(nonce, ciphertext, _bound(study, digest)).decode("utf-8")
        except (InvalidTag, ValueError):
            continue
    return None
