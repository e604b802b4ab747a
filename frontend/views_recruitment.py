"""The pages of a recruitment link's participants: the link's landing page (GET shows what the
study asks, POST starts or resumes, signing the participant in to this browser), and the
completion page with the code (and the way back to the platform).

When the study asks for consent, the landing page shows its text before anything else, with
Accept (the start, with the version accepted recorded) and Decline (one more on the link's count
of declines, nothing else kept, and a polite page). A participant who accepted the current
version is not asked again.

Nothing is created on GET: link previews and mail scanners open links too. Every open of a
link, GET or POST, counts against the address (RECRUITMENT_OPENS_PER_ADDRESS per
RECRUITMENT_WINDOW_SECONDS), so links and ids cannot be tried in bulk."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_safe

from annotation.errors import StudyStateRefused
from annotation.models import Participant, Study, StudyState
from annotation.services import recruitment as service
from annotation.services.annotation_common import timed_out_message
from annotation.services.consent import consent_asked, consent_due, consent_view
from annotation.services.study_state import Write, refusal_message, study_allows
from config.auth import BACKEND
from frontend.throttle import address_try, client_address

# The page's status for each refusal: a closed, expired or full link is gone for good for this
# person (410); the rest are the request's own.
STATUS = {"unknown": 404, "closed": 410, "expired": 410, "full": 410, "no_work": 410, "bad_id": 400,
          "consent": 409, "withdrawn": 410, "timed_out": 410}


def _params(request, link) -> dict[str, object]:
    """The link's parameters in the request (the query on GET, the form on POST): a parameter
    given twice is passed as a list, for the id check to refuse."""
    source = request.POST if request.method == "POST" else request.GET
    values: dict[str, object] = {}
    for name in (link.participant_param, link.study_param, link.session_param):
        if name and name in source:
            given = source.getlist(name)
            values[name] = given[0] if len(given) == 1 else given
    return values


def _page(request, context: dict, status: int = 200):
    return render(request, "frontend/recruitment.html", context, status=status)


@require_http_methods(["GET", "HEAD", "POST"])
def recruitment(request, token: str):
    wait = address_try("recruitment", client_address(request), limit=settings.RECRUITMENT_OPENS_PER_ADDRESS,
                       seconds=settings.RECRUITMENT_WINDOW_SECONDS)
    if wait:
        minutes = max(1, -(-wait // 60))
        response = _page(request, {"refused": f"This address opened study links too often. Wait {minutes} "
                                              "minute(s) and open the link again."}, status=429)
        response["Retry-After"] = str(wait)
        return response
    try:
        link = service.recruitment_link_find(token)
    except service.RecruitmentRefused as refusal:
        return _page(request, {"refused": str(refusal)}, status=404)
    study = link.study
    context: dict = {"study": study, "link": link}
    if not study_allows(study, Write.RECRUIT):
        # The same sentence as every other path the study's state refuses (409 on a POST); a
        # closed study's link shows it is closed (gone, 410) to whoever opens it.
        closed = study.state in (StudyState.CLOSED, StudyState.ARCHIVED)
        context.update(closed=closed, refused=refusal_message(study, Write.RECRUIT))
        status = 409 if request.method == "POST" or not closed else 410
        return _page(request, context, status=status)
    params = _params(request, link)
    try:
        service.participant_id_from(link, params)
    except service.RecruitmentRefused as refusal:
        return _page(request, {**context, "refused": str(refusal)}, status=400)
    asked = consent_asked(study)
    hidden = list(params.items())
    if request.method != "POST":
        digest = service.participant_hash(study, params[link.participant_param])
        known = Participant.objects.filter(study=study, pid_hash=digest).first()
        if known is not None and service.timed_out(known) and not service.participant_complete(participant=known):
            refused = timed_out_message(known.time_out_at)
            return _page(request, {**context, "refused": refused}, status=STATUS["timed_out"])
        if known is None:
            try:
                service.refuse_new(link)
            except service.RecruitmentRefused as refusal:
                return _page(request, {**context, "refused": str(refusal)}, status=STATUS[refusal.kind])
        # Someone else signed in here (a study admin trying their own link) is signed out by Start.
        other = request.user if request.user.is_authenticated and (
            known is None or known.user_id != request.user.pk) else None
        consent = asked if asked is not None and (known is None or consent_due(study, known.user)) else None
        return _page(request, {**context, "known": known, "hidden": hidden, "signed_in_other": other,
                               "consent": consent_view(consent) if consent else None})
    answer = request.POST.get("answer", "")
    if answer == "decline":  # never a start, even from a page whose consent was since withdrawn
        if asked is not None:
            service.recruitment_decline(link=link)
        return _page(request, {**context, "declined": True})
    accepted = request.POST.get("consent", "") if answer == "accept" else ""
    try:
        joined = service.participant_join(link=link, params=params,
                                          consent=int(accepted) if accepted.isdigit() else None)
    except service.RecruitmentRefused as refusal:
        fresh = consent_asked(study) if refusal.kind == "consent" else None
        if fresh is not None:  # show the text (again, if it changed) to accept
            return _page(request, {**context, "hidden": hidden, "consent": consent_view(fresh),
                                   "consent_refused": str(refusal)}, status=STATUS[refusal.kind])
        return _page(request, {**context, "refused": str(refusal)}, status=STATUS[refusal.kind])
    except StudyStateRefused as refusal:  # the study closed since the page was shown
        return _page(request, {**context, "refused": str(refusal)}, status=409)
    login(request, joined.participant.user, backend=BACKEND)
    if service.participant_complete(participant=joined.participant):
        return redirect("participant-done", slug=study.slug)
    return redirect("annotator-queue", slug=study.slug)


@login_required
@require_safe
def participant_done(request, slug: str):
    """The participant's completion code once their work is done (their queue until then); the
    platform's completion URL, when the link has one, is where the page goes next."""
    study = get_object_or_404(Study, slug=slug)
    participant = service.participant_of(study=study, user=request.user)
    if participant is None:
        raise Http404("No such page.")
    if not service.participant_complete(participant=participant):
        return redirect("annotator-queue", slug=study.slug)
    done, total = service.participant_progress(participant)
    return render(request, "frontend/participant_done.html", {
        "study": study, "participant": participant, "link": participant.link, "done": done, "total": total,
    })
