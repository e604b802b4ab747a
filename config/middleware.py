"""Response headers every page gets."""

from __future__ import annotations

import re

from django.conf import settings

from config.staticfiles import page_import_map

SCRIPT_SRC = re.compile(r"(^|;)(\s*script-src\b[^;]*)")


def content_security_policy() -> str:
    """``CONTENT_SECURITY_POLICY`` (settings), its script-src also allowing the pages' import
    map (config/staticfiles.py) by its hash when there is one."""
    policy = settings.CONTENT_SECURITY_POLICY
    _, source = page_import_map()
    if source and policy:
        policy = SCRIPT_SRC.sub(lambda match: f"{match[1]}{match[2].rstrip()} {source}", policy, count=1)
    return policy


class ContentSecurityPolicyMiddleware:
    """Send the Content-Security-Policy with every response that has none yet: a caption that
    slipped an element or handler into a page still cannot run a script."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        policy = content_security_policy()
        if policy:
            response.headers.setdefault("Content-Security-Policy", policy)
        return response
