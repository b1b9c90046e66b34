"""``inline_struct_fields``: the OpenAPI documents of kube-apiserver v1.36.2 in OpenAPI's form."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.testing.openapi_front import inline_struct_fields

CASES = [
    (
        {
            "Extensions": {"x-kubernetes-action": "patch"},
            "OperationProps": {
                "parameters": [{"Extensions": None, "ParameterProps": {"name": "fieldValidation"}}]
            },
        },
        {"x-kubernetes-action": "patch", "parameters": [{"name": "fieldValidation"}]},
    ),
    (
        {"responses": {"ArbitraryKeys": {"200": {"Extensions": None, "description": "OK"}}}},
        {"responses": {"200": {"description": "OK"}}},
    ),
    (
        {"schema": {"ArbitraryKeys": {}, "SchemaProps": {}, "$ref": "#/components/schemas/X"}},
        {"schema": {"$ref": "#/components/schemas/X"}},
    ),
    (
        {"properties": {"spec": {"SchemaProps": {"type": "object"}, "SwaggerSchemaProps": {}}}},
        {"properties": {"spec": {"type": "object"}}},
    ),
    (
        {"securitySchemes": {"BearerToken": {"type": "apiKey"}}, "tags": ["a", 1, None]},
        {"securitySchemes": {"BearerToken": {"type": "apiKey"}}, "tags": ["a", 1, None]},
    ),
]


@pytest.mark.parametrize(
    ("served", "inlined"),
    CASES,
    ids=["operation", "responses", "empty-structs", "schema-properties", "already-inline"],
)
def test_struct_fields_are_inlined(served: dict[str, Any], inlined: dict[str, Any]) -> None:
    assert inline_struct_fields(served) == inlined
