"""The OpenAPI document: valid, typed, documented for integrators; Swagger UI and Redoc served offline."""

import re

import pytest
from django.test import Client
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.validation import validate_schema

from testsupport.api import api_routes

INTERNAL_ID = re.compile(r"\b(API|AUT|DOM|DLV|CMP|INB)-\d+|\bD-\d+\b|Base class")


@pytest.fixture(scope="module")
def schema():
    document = SchemaGenerator().get_schema(request=None, public=True)
    validate_schema(document)  # raises on an invalid OpenAPI 3 document
    return document


def operations(schema):
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            yield path, method, operation


def test_every_operation_is_summarised_described_and_free_of_internal_ids(schema):
    count = 0
    for path, method, op in operations(schema):
        count += 1
        assert op.get("summary"), (method, path)
        assert op.get("description"), (method, path)
        assert not INTERNAL_ID.search(op["summary"] + op["description"]), (method, path)
    assert count >= 50
    for name, component in schema["components"]["schemas"].items():
        assert not INTERNAL_ID.search(str(component)), name


def test_every_body_and_answer_is_typed(schema):
    for path, method, op in operations(schema):
        if method in ("post", "put", "patch") and "requestBody" in op:
            body = op["requestBody"]["content"]["application/json"]["schema"]
            assert "$ref" in body, (method, path)
        for status, response in op["responses"].items():
            content = response.get("content", {}).get("application/json")
            assert content, (method, path, status)
            answer = content["schema"]
            assert "$ref" in answer or "properties" in answer, (method, path, status)


def test_authenticated_operations_name_the_bearer_scheme_and_common_errors(schema):
    assert schema["components"]["securitySchemes"]["ApiKey"]["scheme"] == "bearer"
    for path, method, op in operations(schema):
        if path == "/api/v1/health":
            assert "security" not in op or op["security"] in ([], [{}])
            continue
        assert op["security"] == [{"ApiKey": []}], (method, path)
        for status in ("401", "403", "429", "500"):
            assert status in op["responses"], (method, path, status)
        error_ref = op["responses"]["401"]["content"]["application/json"]["schema"]["$ref"]
        assert error_ref.endswith("/UnauthenticatedError")


def test_lists_document_the_cursor_pagination(schema):
    listed = schema["paths"]["/api/v1/contacts"]["get"]
    names = {p["name"] for p in listed["parameters"]}
    assert {"limit", "cursor", "search"} <= names
    page = listed["responses"]["200"]["content"]["application/json"]["schema"]
    page = schema["components"]["schemas"][page["$ref"].rsplit("/", 1)[1]] if "$ref" in page else page
    assert set(page["properties"]) == {"data", "pagination"}
    assert set(page["properties"]["pagination"]["properties"]) == {"limit", "totalItems", "cursor", "isDone"}


def test_contact_fields_are_declared_camel_case(schema):
    contact = schema["components"]["schemas"]["Contact"]["properties"]
    assert set(contact) == {"id", "email", "firstName", "lastName", "source", "createdAt", "updatedAt"}
    create = schema["components"]["schemas"]["ContactCreateRequest"]
    assert create["required"] == ["email"]
    assert create["properties"]["firstName"]["maxLength"] == 200


@pytest.mark.django_db
def test_docs_and_redoc_are_served_offline_without_a_key():
    client = Client()
    for url in ("/api/v1/docs", "/api/v1/redoc", "/api/v1/schema"):
        response = client.get(url)
        assert response.status_code == 200, url
    docs = client.get("/api/v1/docs").content.decode()
    redoc = client.get("/api/v1/redoc").content.decode()
    assert "drf_spectacular_sidecar/swagger-ui-dist" in docs
    assert "drf_spectacular_sidecar/redoc" in redoc
    for page in (docs, redoc):
        assert "cdn.jsdelivr.net" not in page and "unpkg.com" not in page


def test_every_routed_operation_is_in_the_document(schema):
    routed = set()
    for route, view in api_routes():
        path = "/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)
        routed |= {(path, method.lower()) for method in getattr(view, "required_scopes", {})}
    documented = {(path, method) for path, method, _ in operations(schema)}
    assert routed and routed <= documented, sorted(routed - documented)
    assert {p for p, _ in routed if "/campaigns" in p} and {p for p, _ in routed if "/inbox/" in p}


def test_patch_answered_like_put_is_documented_as_its_partial_variant(schema):
    patched = 0
    for path, item in schema["paths"].items():
        if "patch" in item:
            patched += 1
            put, patch = item["put"], item["patch"]
            assert patch["operationId"] == put["operationId"].removesuffix("_update") + "_partial_update", (
                path
            )
            assert patch["summary"] == f"{put['summary']} (partial)", path
            assert patch["responses"] == put["responses"], path
            put_body = put["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
            patch_body = patch["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[
                1
            ]
            assert patch_body in (put_body, f"Patched{put_body}"), path  # every key optional
    assert patched >= 6


def test_the_document_renders_as_yaml_and_json(schema):
    """`make test` writes the document with `spectacular --file …yaml`: every key must be a plain string (a
    TextChoices member as a mapping key made the YAML renderer fail while the JSON one passed)."""
    from drf_spectacular.renderers import OpenApiJsonRenderer, OpenApiYamlRenderer

    assert OpenApiYamlRenderer().render(schema, renderer_context={}).startswith(b"openapi:")
    assert OpenApiJsonRenderer().render(schema, renderer_context={})
