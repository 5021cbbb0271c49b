"""`/api/v1/campaigns` (API-29 … API-31): serializers, views and routes."""
