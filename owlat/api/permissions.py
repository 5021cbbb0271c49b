"""Scope (API-03) and feature-flag (DOM-17) checks as DRF permission classes.

A view declares `required_scopes = {"GET": "contacts:read", "POST": "contacts:write"}` (HEAD uses GET's) and,
optionally, `feature_flag = "automations"`. A method without a declared scope fails closed (500: a
programming error, never an open endpoint).
"""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission
from rest_framework.request import Request


def required_scope(view: Any, method: str) -> str:
    method = "GET" if method.upper() == "HEAD" else method.upper()
    scope = (getattr(view, "required_scopes", None) or {}).get(method)
    if scope is None:
        raise RuntimeError(f"{type(view).__name__} declares no scope for {method}")
    return scope


class HasScope(BasePermission):
    """403 "This API key is missing the required scope: <scope>"; scopes never imply each other."""

    message = "Forbidden"

    def has_permission(self, request: Request, view: Any) -> bool:
        scope = required_scope(view, request.method or "")
        if scope in (getattr(request.auth, "scopes", None) or []):
            return True
        self.message = f"This API key is missing the required scope: {scope}"
        return False


class FeatureFlagEnabled(BasePermission):
    """403 with the DOM-17 message when the view's `feature_flag` is off for the key's organization."""

    message = "Forbidden"

    def has_permission(self, request: Request, view: Any) -> bool:
        flag = getattr(view, "feature_flag", None)
        if not flag:
            return True
        from owlat.flags import feature_disabled_message, flag_enabled

        auth: Any = request.auth  # the ApiKey (ApiKeyAuthentication)
        if flag_enabled(auth.organization_id, flag):
            return True
        self.message = feature_disabled_message(flag)
        return False
