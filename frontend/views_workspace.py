"""Pages of the annotator: their queue in a study, and the workspace for one annotation."""

from django.contrib.auth.decorators import login_required
from django.http import Http404


@login_required
def annotator_queue(request, slug: str):
    raise Http404("Being built.")


@login_required
def workspace(request, annotation_id: int):
    raise Http404("Being built.")
