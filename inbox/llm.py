"""The one module through which every language-model call goes (AGT-28 … AGT-30).

Every provider speaks the OpenAI chat-completions shape, so the official `openai` client is used with a
configurable base URL (OpenAI, OpenRouter, Ollama, vLLM, or the loopback test server). Tasks are routed to a
model tier (AGT-29); each call returns what it used (model, tokens, duration) for the agent action row.
The provider comes from the environment, or from the organization's own setting in the admin (AGT-28 [orig]);
a base URL an organization entered is reached only through the outbound-HTTP guard.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from inbox.provider_settings import provider_for

FAST_TASKS = frozenset({"classify", "extract", "guard", "summarize"})
CAPABLE_TASKS = frozenset({"draft", "plan"})
NOT_CONFIGURED = "LLM API not configured: set LLM_PROVIDER and LLM_API_KEY (or LLM_BASE_URL for ollama)."


class LlmNotConfigured(RuntimeError):
    pass


class LlmError(RuntimeError):
    """A model call failed (timeout, connection, bad answer); `retry_after` (seconds) when the provider said."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


#: answer length bounds per tier (a draft is a mail, a structured answer a few fields)
MAX_TOKENS_CAPABLE = 1500
MAX_TOKENS_FAST = 400
#: a `Retry-After` up to this many seconds is waited out once inside the call; a longer one fails the step
RETRY_AFTER_WAIT_MAX = 5.0
#: base URLs whose provider refused `json_schema` structured output: they get `json_object` and a strict parse
_no_json_schema: set[str] = set()


@dataclass(frozen=True)
class LlmResult:
    content: str
    model: str
    usage: dict[str, int]
    duration_ms: int
    data: Any = None  # parsed JSON for structured calls


@dataclass
class CallLog:
    """What a step's model calls used, summed for its agent action (AGT-09)."""

    models: list[str] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    duration_ms: int = 0

    def add(self, result: LlmResult) -> None:
        if result.model not in self.models:
            self.models.append(result.model)
        self.prompt_tokens += result.usage.get("promptTokens", 0)
        self.completion_tokens += result.usage.get("completionTokens", 0)
        self.duration_ms += result.duration_ms

    def as_fields(self) -> dict[str, Any]:
        if not self.models:
            return {"model_used": None, "token_usage": None}
        return {
            "model_used": ",".join(self.models),
            "token_usage": {
                "promptTokens": self.prompt_tokens,
                "completionTokens": self.completion_tokens,
                "totalTokens": self.prompt_tokens + self.completion_tokens,
            },
        }


def llm_configured(organization_id: Any = None) -> bool:
    """A provider is chosen and usable — the organization's own (AGT-28, admin) or the environment's: a key, or
    ollama, which needs none."""
    return provider_for(organization_id).usable


def base_url(organization_id: Any = None) -> str | None:
    return provider_for(organization_id).base_url


def model_for(task: str) -> str:
    """AGT-29: system-wide task → tier → model."""
    if task in CAPABLE_TASKS:
        return settings.LLM_MODEL_CAPABLE or settings.LLM_MODEL or "gpt-4o"
    if task in FAST_TASKS:
        return settings.LLM_MODEL_FAST or settings.LLM_MODEL or "gpt-4o-mini"
    raise ValueError(f"unknown model task {task!r}")


_clients: dict[tuple, Any] = {}


def call_timeout() -> float:
    """One model call's timeout: `LLM_TIMEOUT_SECONDS`, but at most 40 % of the django-q2 task timeout left after
    a `Retry-After` wait. A step makes at most two calls (after a short `Retry-After`, or the `json_object`
    fallback), so a slow model fails the step as a step (counted, retried by the cron) well before the worker
    would be killed at the task timeout."""
    task_timeout = float(settings.Q_CLUSTER.get("timeout") or 120)
    return max(1.0, min(settings.LLM_TIMEOUT_SECONDS, (task_timeout - RETRY_AFTER_WAIT_MAX) * 0.4))


def _client(organization_id: Any = None) -> Any:
    config = provider_for(organization_id)
    if not config.usable:
        raise LlmNotConfigured(NOT_CONFIGURED)
    from openai import OpenAI

    key = (config.base_url, config.api_key or "ollama", call_timeout(), config.tenant)
    client = _clients.get(key)
    if client is None:
        # no client-side retries: a failed step goes to `failed` and the cron retries it (AGT-24)
        kwargs: dict[str, Any] = {"base_url": key[0], "api_key": key[1], "timeout": key[2], "max_retries": 0}
        if config.tenant:
            # a base URL an organization entered: every connection through the outbound-HTTP guard
            from owlat import outbound

            kwargs["http_client"] = outbound.httpx_client(timeout=key[2])
        client = OpenAI(**kwargs)
        if len(_clients) > 64:
            _clients.clear()
        _clients[key] = client
    return client


def chat(
    task: str,
    messages: list[dict[str, str]],
    *,
    temperature: float = 0.2,
    schema: dict[str, Any] | None = None,
    max_tokens: int | None = None,
    organization_id: Any = None,
) -> LlmResult:
    """One chat completion. With `schema`, structured output (JSON schema) parsed into `data`."""
    model = model_for(task)
    bound = max_tokens or (MAX_TOKENS_CAPABLE if task in CAPABLE_TASKS else MAX_TOKENS_FAST)
    kwargs: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "temperature": temperature,
        "max_tokens": bound,
    }
    provider = base_url(organization_id) or ""
    if schema is not None:
        kwargs["response_format"] = _response_format(task, schema, provider)
    started = time.perf_counter()
    response = _create(task, kwargs, organization_id, provider, schema)
    duration_ms = int((time.perf_counter() - started) * 1000)
    try:
        content = response.choices[0].message.content or ""
    except (AttributeError, IndexError) as exc:
        raise LlmError(f"{task} model call returned no choice") from exc
    usage = getattr(response, "usage", None)
    usage_map = {
        "promptTokens": int(getattr(usage, "prompt_tokens", 0) or 0),
        "completionTokens": int(getattr(usage, "completion_tokens", 0) or 0),
    }
    usage_map["totalTokens"] = usage_map["promptTokens"] + usage_map["completionTokens"]
    data = None
    if schema is not None:
        try:
            data = json.loads(_strip_fence(content))
        except ValueError as exc:
            raise LlmError(f"{task} model answer is not JSON") from exc
        if not isinstance(data, dict):
            raise LlmError(f"{task} model answer is not a JSON object")
    return LlmResult(
        content=content,
        model=getattr(response, "model", None) or model,
        usage=usage_map,
        duration_ms=duration_ms,
        data=data,
    )


def _response_format(task: str, schema: dict[str, Any], provider: str) -> dict[str, Any]:
    if provider in _no_json_schema:
        return {"type": "json_object"}
    return {
        "type": "json_schema",
        "json_schema": {"name": f"{task}_result", "schema": schema, "strict": True},
    }


def _retry_after(exc: Exception) -> float | None:
    response = getattr(exc, "response", None)
    value = getattr(response, "headers", {}).get("retry-after") if response is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except (TypeError, ValueError):
        return None


def _create(task: str, kwargs: dict[str, Any], organization_id: Any, provider: str, schema: Any) -> Any:
    """The call, bounded by the client's timeout: a short `Retry-After` (429/503) is waited out once; a provider
    that refuses `json_schema` (400 naming it) is asked again once with `json_object`, and remembered."""
    from openai import APIStatusError

    for attempt in range(2):
        try:
            return _client(organization_id).chat.completions.create(**kwargs)
        except LlmNotConfigured:
            raise
        except APIStatusError as exc:
            wait = _retry_after(exc)
            text = str(exc).lower()
            if (
                attempt == 0
                and exc.status_code in (429, 503)
                and wait is not None
                and wait <= RETRY_AFTER_WAIT_MAX
            ):
                time.sleep(wait)
                continue
            if (
                attempt == 0
                and schema is not None
                and exc.status_code == 400
                and ("json_schema" in text or "response_format" in text)
            ):
                _no_json_schema.add(provider)
                kwargs = {**kwargs, "response_format": {"type": "json_object"}}
                continue
            raise LlmError(
                f"{task} model call failed: {type(exc).__name__}: {exc}", retry_after=wait
            ) from exc
        except Exception as exc:
            raise LlmError(f"{task} model call failed: {type(exc).__name__}: {exc}") from exc
    raise LlmError(f"{task} model call failed twice")


def _strip_fence(text: str) -> str:
    text = text.strip()
    if text.startswith("```"):
        text = text.strip("`")
        if text.startswith("json"):
            text = text[4:]
    return text.strip()
