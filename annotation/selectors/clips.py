"""The study page's clip list, a page at a time: the study's admins and researchers browse it;
nobody is sent every clip at once (a study of thousands of clips would make its page megabytes).

Two queries whatever the study's size: the count, and one page of clips with each clip's
caption count (a correlated count, so only the page's clips are counted).
"""

from __future__ import annotations

import math
from typing import Any

from django.db.models import Count, IntegerField, OuterRef, Subquery

from annotation.errors import ServiceError
from annotation.models import Caption, Clip, Study

CLIPS_PER_PAGE = 50
CARD_FIELDS = ("id", "name", "duration", "width", "height", "poster", "media_error", "manipulated")


class BadPage(ServiceError):
    """A page number that is not a whole number from 1 to the last page."""


def page_number(value: Any) -> int:
    """`page` from a request as a whole number of at least 1 (1 when absent)."""
    if value in (None, ""):
        return 1
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise BadPage(f"page must be a whole number, not {str(value)[:20]!r}.") from None
    if number < 1:
        raise BadPage(f"page must be 1 or more, not {number}.")
    return number


def clip_page(study: Study, *, page: int = 1, per_page: int = CLIPS_PER_PAGE) -> dict[str, Any]:
    """Page `page` (from 1) of the study's clips in name order, each as a dict of CARD_FIELDS
    and `caption_count`; with `count` (all the study's clips), `page`, `pages` (at least 1) and
    the neighbouring page numbers (None at either end). A page past the last one is refused
    (BadPage); page 1 of a study without clips is empty."""
    count = Clip.objects.filter(study=study).count()
    pages = max(1, math.ceil(count / per_page))
    if page > pages:
        raise BadPage(f"page {page} is past the last page of clips, {pages}.")
    captions = Subquery(
        Caption.objects.filter(clip_id=OuterRef("pk")).order_by().values("clip_id")
        .annotate(n=Count("pk")).values("n"),
        output_field=IntegerField(),
    )
    start = (page - 1) * per_page
    clips = list(
        Clip.objects.filter(study=study).order_by("name")
        .annotate(caption_count=captions).values(*CARD_FIELDS, "caption_count")[start:start + per_page]
    )
    for clip in clips:
        clip["caption_count"] = clip["caption_count"] or 0
    return {
        "clips": clips,
        "count": count,
        "page": page,
        "pages": pages,
        "previous": page - 1 if page > 1 else None,
        "next": page + 1 if page < pages else None,
        "first_number": start + 1 if clips else 0,
        "last_number": start + len(clips),
    }
