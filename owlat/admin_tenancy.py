"""Active-organization switch for the admin (placeholder until the admin lands)."""


class ActiveOrganizationMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)


def active_organization_context(request):
    return {}
