"""``{% import_map %}``: the import map from the ES modules' plain URLs to their hashed ones
(config/staticfiles.py), in the head of every page before any module script; nothing with DEBUG
on, where the plain names are served."""

from __future__ import annotations

from django import template
from django.utils.safestring import mark_safe

from config.staticfiles import page_import_map

register = template.Library()


@register.simple_tag
def import_map() -> str:
    content, _ = page_import_map()
    # The map is built from the collected files' names and escaped for a <script> element there.
    return mark_safe(f'<script type="importmap">{content}</script>') if content else ""
