"""`/api/v1` routes of the inbox (API-33, API-34)."""

from django.urls import path

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
]
