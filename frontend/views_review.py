"""Pages of the QC reviewer: the review queue of a study, and the review of one annotation."""

from django.contrib.auth.decorators import login_required
from django.http import Http404


@login_required
def review_queue(request, slug: str):
    raise Http404("Being built.")


@login_required
def review(request, annotation_id: int):
    raise Http404("Being built.")
