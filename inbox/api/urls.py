"""`/api/v1` routes of the inbox (API-33, API-34) and of its agent configuration."""

from django.urls import path

from inbox.api import config_views as c
from inbox.api import views as v

ID = "inbox/messages/<id:message_id>"

urlpatterns = [
    path("inbox/messages", v.MessageListView.as_view(), name="api-inbox-messages"),
    path(f"{ID}/actions", v.MessageActionsView.as_view(), name="api-inbox-message-actions"),
    *[
        path(f"{ID}/{verb}", v.review_view(verb).as_view(), name=f"api-inbox-{verb}")
        for verb in v.REVIEW_VERBS
    ],
    path(ID, v.MessageDetailView.as_view(), name="api-inbox-message"),
    # configuration: agent settings, handling rules, model provider, circuit breakers
    path("inbox/config", c.AgentConfigView.as_view(), name="api-inbox-config"),
    path("inbox/rules", c.HandlingRuleListView.as_view(), name="api-inbox-rules"),
    path("inbox/rules/<id:rule_id>", c.HandlingRuleDetailView.as_view(), name="api-inbox-rule"),
    path("inbox/model-provider", c.ModelProviderView.as_view(), name="api-inbox-model-provider"),
    path("inbox/breakers", c.CircuitBreakerListView.as_view(), name="api-inbox-breakers"),
    path("inbox/breakers/close", c.CircuitBreakerCloseView.as_view(), name="api-inbox-breaker-close"),
]
