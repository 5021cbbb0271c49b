"""The delivery app's part of `/api/v1`: transactional sends (API-22, API-32)."""
