"""What counts in the profile, Table 1, scoring and the release: one selection, used by all of them."""

from django.db.models import Exists, OuterRef

from annotation.models import Annotation, GoldItem


def counted_annotations(annotations):
    """The annotations of a queryset that count in the profile, Table 1 and the release: the
    study's work (purpose ``work``) on captions that are not gold items."""
    return annotations.filter(purpose=Annotation.Purpose.WORK).exclude(
        Exists(GoldItem.objects.filter(caption_id=OuterRef("caption_id")))
    )
