"""How large a file an import takes (``MAX_IMPORT_FILE_MB``), said the same way wherever a file
arrives: an upload through the API (413) or a path given to a management command."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings


def megabytes(size: int) -> str:
    """A size in megabytes (10^6 bytes) as a message writes it: ``1.1``, ``110``."""
    return f"{size / 1_000_000:,.2f}".rstrip("0").rstrip(".")


def too_large(what: str, size: int, *, slack: int = 0) -> str | None:
    """Why a file of ``size`` bytes is refused (``what`` names it: ``scores.jsonl``, ``The
    upload``), or None when an import takes it; ``slack`` bytes over the limit are let through
    (a multipart body's framing around its file)."""
    limit = settings.MAX_IMPORT_FILE_MB
    if size <= limit * 1_000_000 + slack:
        return None
    return (f"{what} is {megabytes(size)} MB; files imported here may be at most {limit:,} MB "
            "(MAX_IMPORT_FILE_MB).")


def file_too_large(path: Path) -> str | None:
    """Why the file at ``path`` is refused for its size, looked up before a byte is read."""
    return too_large(str(path), path.stat().st_size)
