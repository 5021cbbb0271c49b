"""One layout for every app's API: an `api/` package with `views.py`, `serializers.py` and `urls.py`; every
`/api/v1` view is an `ApiView` defined in its app's `api` package."""

from importlib.util import find_spec
from pathlib import Path

from owlat.api.base import ApiView
from testsupport.api import api_routes

ROOT = Path(__file__).resolve().parent.parent
APPS = ("owlat", "templates", "delivery", "automations", "campaigns", "inbox")
OLD_MODULES = ("api.py", "api_views.py")
DOC_VIEWS = {
    "SpectacularJSONAPIView",
    "SpectacularSwaggerView",
    "SpectacularSwaggerSplitView",
    "SpectacularRedocView",
}


def test_every_app_has_the_api_package_and_nothing_beside_it():
    for app in APPS:
        for old in OLD_MODULES:
            assert not (ROOT / app / old).exists(), f"{app}/{old}: move it into {app}/api/"
        for name in ("__init__.py", "views.py", "serializers.py", "urls.py"):
            assert (ROOT / app / "api" / name).exists(), f"{app}/api/{name} is missing"


def test_every_api_route_is_an_api_view_of_its_apps_api_package():
    routes = list(api_routes())
    assert len(routes) > 30
    for route, view in routes:
        if getattr(view, "__name__", "") in DOC_VIEWS:
            continue
        assert isinstance(view, type) and issubclass(view, ApiView), route
        module = view.__module__
        app = module.split(".", 1)[0]
        assert app in APPS, route
        assert module.startswith(f"{app}.api."), f"{route}: {module} is outside {app}/api/"


def _production_sources():
    for app in APPS:
        for path in (ROOT / app).rglob("*.py"):
            if "tests" not in path.parts and "migrations" not in path.parts:
                yield path


def test_one_way_to_write_an_endpoint():
    # the old hand-written view's helpers (LegacyApiView, `self.body()`, `self.paginated()`, `api_route`,
    # `parse_iso`) are gone for good: views read `request.data` and query serializers, lists paginate
    # through `KeysetPagination`, routes are plain `path()`s (ApiMiddleware makes them slash-optional)
    assert find_spec("owlat.api.compat") is None
    for app in APPS:
        assert find_spec(f"{app}.api_urls") is None, f"{app}/api_urls.py: routes live in {app}/api/urls.py"
    banned = (
        "owlat.api.compat",
        "LegacyApiView",
        "api_route(",
        "parse_iso(",
        "self.body(",
        "self.paginated(",
    )
    offenders = [
        f"{path.relative_to(ROOT)}: {word}"
        for path in _production_sources()
        for word in banned
        if word in path.read_text(encoding="utf-8")
    ]
    assert offenders == []
    for app in APPS:
        urls = (ROOT / app / "api" / "urls.py").read_text(encoding="utf-8")
        assert "re_path" not in urls, f"{app}/api/urls.py: declare routes with path()"


def test_every_api_view_declares_its_scopes_the_one_way():
    for route, view in api_routes():
        if getattr(view, "__name__", "") in DOC_VIEWS or not getattr(view, "authentication_classes", None):
            continue
        assert view.required_scopes, route
        assert not hasattr(view, "scopes") and not hasattr(view, "required_scope"), route
        for method in view.required_scopes:
            assert hasattr(view, method.lower()), f"{route}: a scope for {method}, which it does not answer"


def test_every_app_api_is_mounted():
    routed = {view.__module__.split(".", 1)[0] for _, view in api_routes() if isinstance(view, type)}
    assert routed >= set(APPS)
