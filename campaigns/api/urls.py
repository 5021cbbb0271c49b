"""`/api/v1` routes of campaigns (API-29 … API-31)."""

from django.urls import path

from campaigns.api import views as v

ID = "campaigns/<id:campaign_id>"

urlpatterns = [
    path("campaigns", v.CampaignListView.as_view(), name="api-campaigns"),
    path(f"{ID}/test-send", v.CampaignTestSendView.as_view(), name="api-campaign-test-send"),
    path(f"{ID}/duplicate", v.CampaignDuplicateView.as_view(), name="api-campaign-duplicate"),
    *[
        path(f"{ID}/{verb}", v.transition_view(verb).as_view(), name=f"api-campaign-{verb}")
        for verb in v.TRANSITIONS
    ],
    *[
        path(f"{ID}/ab-test/{action}", v.ab_view(action).as_view(), name=f"api-campaign-ab-{action}")
        for action in v.AB_ACTIONS
    ],
    path(f"{ID}/preflight", v.PreflightView.as_view(), name="api-campaign-preflight"),
    path(f"{ID}/stats", v.StatsView.as_view(), name="api-campaign-stats"),
    path(f"{ID}/sends", v.SendListView.as_view(), name="api-campaign-sends"),
    path(ID, v.CampaignDetailView.as_view(), name="api-campaign"),
]
