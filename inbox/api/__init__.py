"""`/api/v1/inbox/...` (API-33, API-34): thin views over `inbox.receive` and `inbox.review`."""
