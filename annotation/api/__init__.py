"""The REST API (``/api/``): thin views that parse input, call one service or selector and
serialise the answer; request and answer serializers; URL routes; the wording of refusals.

May import services, selectors, interchange, media, rules, models and permissions; nothing below
imports it.
"""
