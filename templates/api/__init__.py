"""The templates app's part of `/api/v1` (API-26)."""
