"""Response headers every page gets."""

from __future__ import annotations

from django.conf import settings


class ContentSecurityPolicyMiddleware:
    """Send ``CONTENT_SECURITY_POLICY`` (settings) with every response that has none yet: a
    caption that slipped an element or handler into a page still cannot run a script."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if settings.CONTENT_SECURITY_POLICY:
            response.headers.setdefault("Content-Security-Policy", settings.CONTENT_SECURITY_POLICY)
        return response
