"""The per-key rate limit (API-04) as a DRF throttle over the shared token bucket (`owlat.ratelimit`).

The state of the take is kept on the request, so the view can put `X-RateLimit-Limit/Remaining/Reset` on
every response to an authenticated request (also 403/404/429). The 429 message is API-04's (see
`ApiView.throttled`).
"""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ErrorDetail, Throttled
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from owlat.api import auth

RATE_STATE_ATTR = "owlat_rate_state"
# Set by `ApiView.initial` when this throttle follows the key's authentication: `ApiKeyAuthentication` then
# takes the token in the lookup's statement and leaves the state under RATE_STATE_ATTR.
TAKE_WITH_AUTH_ATTR = "owlat_take_with_auth"


def rate_state(request: Request) -> auth.RateState | None:
    return getattr(request._request, RATE_STATE_ATTR, None)


class RateLimited(Throttled):
    """429 with API-04's message ("Rate limit exceeded. Maximum 10 requests per second."), nothing appended."""

    def __init__(self, wait: float | None) -> None:
        super().__init__(wait)
        self.detail = ErrorDetail(auth.rate_limit_message(), code=self.default_code)


class ApiKeyRateThrottle(BaseThrottle):
    """One token per request from the key's bucket (`API_RATE_LIMIT_PER_SECOND`, `API_RATE_LIMIT_BURST`)."""

    def __init__(self) -> None:
        self.state: auth.RateState | None = None

    def allow_request(self, request: Request, view: Any) -> bool:
        if request.auth is None:  # public endpoints (health, schema, docs)
            return True
        state = rate_state(request)  # taken with the authentication
        if state is None:
            state = auth.take_request_token(request.auth)  # type: ignore[arg-type]  # the ApiKey
            setattr(request._request, RATE_STATE_ATTR, state)
        self.state = state
        return state.allowed

    def wait(self) -> float | None:
        return None if self.state is None else float(self.state.retry_after)
