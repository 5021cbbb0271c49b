"""`/api/v1` routes of the inbox app (API-33, API-34); every route is slash-optional."""

from inbox.api import views
from owlat.api.compat import api_route

_ID = r"inbox/messages/(?P<message_id>[^/]+)"

urlpatterns = [
    api_route(r"inbox/messages", views.MessageListView, name="api-inbox-messages"),
    api_route(rf"{_ID}/actions", views.MessageActionsView, name="api-inbox-message-actions"),
    api_route(rf"{_ID}/approve", views.ApproveView, name="api-inbox-approve"),
    api_route(rf"{_ID}/edit", views.EditView, name="api-inbox-edit"),
    api_route(rf"{_ID}/reject", views.RejectView, name="api-inbox-reject"),
    api_route(rf"{_ID}/undo", views.UndoView, name="api-inbox-undo"),
    api_route(rf"{_ID}/release", views.ReleaseView, name="api-inbox-release"),
    api_route(rf"{_ID}/retry", views.RetryView, name="api-inbox-retry"),
    api_route(rf"{_ID}/block-sender", views.BlockSenderView, name="api-inbox-block-sender"),
    api_route(_ID, views.MessageDetailView, name="api-inbox-message"),
]
