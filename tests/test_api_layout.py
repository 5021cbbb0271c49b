"""One layout for every app's API: an `api/` package with `views.py`, `serializers.py` and `urls.py`; every
`/api/v1` view is an `ApiView` defined in its app's `api` package."""

from importlib.util import find_spec
from pathlib import Path

from django.urls import URLPattern, URLResolver, get_resolver

from owlat.api.base import ApiView

ROOT = Path(__file__).resolve().parent.parent
APPS = ("owlat", "templates", "delivery", "automations", "campaigns", "inbox")
OLD_MODULES = ("api.py", "api_views.py")
DOC_VIEWS = {"SpectacularJSONAPIView", "SpectacularSwaggerView", "SpectacularRedocView"}


def _api_views():
    def walk(patterns, prefix=""):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern))
            elif isinstance(pattern, URLPattern):
                yield prefix + str(pattern.pattern), pattern.callback

    for route, callback in walk(get_resolver().url_patterns):
        if route.startswith("api/v1/"):
            yield route, getattr(callback, "view_class", None) or callback


def test_every_app_with_an_api_has_the_api_package():
    for app in APPS:
        package = ROOT / app / "api"
        for old in OLD_MODULES:
            assert not (ROOT / app / old).exists(), f"{app}/{old}: move it into {app}/api/"
        placeholder = ROOT / app / "api_urls.py"
        if placeholder.exists():
            # a placeholder until the app's api/ package lands (no routes), or a re-export of it
            module = __import__(f"{app}.api_urls", fromlist=["urlpatterns"])
            own = __import__(f"{app}.api.urls", fromlist=["urlpatterns"]) if package.exists() else None
            assert not module.urlpatterns or (own is not None and module.urlpatterns is own.urlpatterns), (
                f"{app}/api_urls.py has routes: move them to {app}/api/urls.py"
            )
        if package.exists():
            for name in ("__init__.py", "views.py", "serializers.py", "urls.py"):
                assert (package / name).exists(), f"{app}/api/{name} is missing"


def test_every_api_route_is_an_api_view_of_its_apps_api_package():
    routes = list(_api_views())
    assert len(routes) > 30
    for route, view in routes:
        if getattr(view, "__name__", "") in DOC_VIEWS:
            continue
        assert isinstance(view, type) and issubclass(view, ApiView), route
        module = view.__module__
        app = module.split(".", 1)[0]
        assert app in APPS, route
        assert module.startswith(f"{app}.api."), f"{route}: {module} is outside {app}/api/"


def test_legacy_helpers_are_used_only_by_the_apps_not_yet_converted():
    # owlat.api.compat (the old view's spellings) goes when its last importer is converted
    importers = sorted(
        str(path.relative_to(ROOT))
        for app in APPS
        for path in (ROOT / app).rglob("*.py")
        if "owlat.api.compat import" in path.read_text(encoding="utf-8")
        and "tests" not in path.parts
        and path.parent != ROOT / "owlat" / "api"
    )
    assert importers == [
        "campaigns/api/urls.py",
        "campaigns/api/views.py",
        "inbox/api/urls.py",
        "inbox/api/views.py",
    ]


def test_the_campaigns_and_inbox_packages_are_included_once_they_exist():
    from owlat.api import urls

    included = {str(getattr(p, "urlconf_name", "")) for p in urls.urlpatterns}
    for app in ("campaigns", "inbox"):
        if find_spec(f"{app}.api") is not None:
            assert any(f"{app}.api.urls" in name for name in included), app
