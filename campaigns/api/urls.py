"""`/api/v1` routes of campaigns (API-29 … API-31); every route is slash-optional."""

from campaigns.api import views as v
from owlat.api.compat import api_route

_ID = r"campaigns/(?P<campaign_id>[^/]+)"

urlpatterns = [
    api_route(r"campaigns", v.CampaignListView, name="api-campaigns"),
    api_route(rf"{_ID}/duplicate", v.CampaignDuplicateView, name="api-campaign-duplicate"),
    *[
        api_route(rf"{_ID}/{verb}", v.transition_view(verb), name=f"api-campaign-{verb}")
        for verb in ("schedule", "unschedule", "send", "cancel")
    ],
    *[
        api_route(rf"{_ID}/ab-test/{action}", v.ab_view(action), name=f"api-campaign-ab-{action}")
        for action in ("enable", "disable", "declare-winner")
    ],
    api_route(rf"{_ID}/preflight", v.PreflightView, name="api-campaign-preflight"),
    api_route(rf"{_ID}/stats", v.StatsView, name="api-campaign-stats"),
    api_route(rf"{_ID}/sends", v.SendListView, name="api-campaign-sends"),
    api_route(_ID, v.CampaignDetailView, name="api-campaign"),
]
