"""`{% load owlat_sandbox %}{% sandboxed_frame url title="Preview" height=600 %}`: tenant HTML framed from a
sandboxed response (owlat.sandbox)."""

from __future__ import annotations

from django import template
from django.utils.safestring import SafeString

from owlat.sandbox import sandboxed_frame as _frame

register = template.Library()


@register.simple_tag
def sandboxed_frame(src: str, title: str = "Preview", height: int = 600) -> SafeString:
    return _frame(src, title=title, height=height)
