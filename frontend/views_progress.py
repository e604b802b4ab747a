"""The progress page of a study, for its admins."""

from django.contrib.auth.decorators import login_required
from django.http import Http404


@login_required
def progress(request, slug: str):
    raise Http404("Being built.")
