"""The block document in the OpenAPI document: its pydantic schema (templates.blocks) as components."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.plumbing import ResolvedComponent


class BlockContentFieldExtension(OpenApiSerializerFieldExtension):
    target_class = "templates.api.serializers.BlockContentField"
    priority = 1
    match_subclasses = True

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> Any:
        from templates.blocks import document_openapi_components

        schema, components = document_openapi_components()
        for name, sub in {"BlockDocument": schema, **components}.items():
            auto_schema.registry.register_on_missing(
                ResolvedComponent(name=name, type=ResolvedComponent.SCHEMA, object=name, schema=sub)
            )
        return {"allOf": [{"$ref": "#/components/schemas/BlockDocument"}], "nullable": True}
