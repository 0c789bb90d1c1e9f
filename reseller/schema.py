"""drf-spectacular extensions: how our authentication classes appear in the OpenAPI schema,
the order of its operations, and the problems every authenticated operation can answer."""

import re

from djangorestframework_camel_case.util import camelize_re, underscore_to_camel
from drf_spectacular.authentication import SessionScheme
from drf_spectacular.contrib.rest_framework_simplejwt import SimpleJWTScheme
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.plumbing import alpha_operation_sorter, build_examples_list

from reseller.api import PROBLEM_DESCRIPTIONS
from reseller.openapi_examples import PROBLEM_JSON, problem_examples

ADMIN_PATHS = "/api/v1/admin/"


def reseller_first(endpoint) -> tuple:
    """SORT_OPERATIONS: the reseller's operations first (by path), the back office's last."""
    path = endpoint[0]
    return (path.startswith(ADMIN_PATHS), alpha_operation_sorter(endpoint))


class SiteSessionScheme(SessionScheme):
    target_class = "reseller.api.SessionAuthentication"
    name = "siteSession"


class JwtScheme(SimpleJWTScheme):
    """Our Bearer class (SimpleJWT's, refusing suspended accounts): the same ``jwtAuth``."""

    target_class = "accounts.authentication.JwtAuthentication"
    name = "jwtAuth"


class ApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.authentication.ApiKeyAuthentication"
    name = "apiKey"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "x-api-key",
            "description": "A live (`rsl_live_…`) or test (`rsl_test_…`) key, created on the "
            "profile page. Never together with an Authorization header.",
        }


def document_ambiguous_credentials(result, generator, request, public):
    """Every operation that accepts credentials can answer 400 ``ambiguous_credentials``
    (an x-api-key together with an Authorization header, docs/contract.md §2): document it
    where the operation does not list a 400 already. A drf-spectacular postprocessing hook."""
    for item in result.get("paths", {}).values():
        for method, operation in item.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            if method == "parameters" or "400" in operation["responses"]:
                continue
            if not operation.get("security"):
                continue
            examples = problem_examples(400, ("ambiguous_credentials", "validation_error"))
            operation["responses"]["400"] = {
                "description": PROBLEM_DESCRIPTIONS[400],
                "content": {
                    PROBLEM_JSON: {
                        "schema": {"$ref": "#/components/schemas/Problem"},
                        "examples": build_examples_list(examples),
                    }
                },
            }
    return result


def document_rate_limited(result, generator, request, public):
    """Every request made with an API key counts against the key's per-minute limit
    (accounts.throttling.ApiKeyRateThrottle is a default throttle of every view, contract
    section 7), so every operation that accepts a key can answer 429 ``rate_limited``:
    document it where the operation does not. A drf-spectacular postprocessing hook."""
    example = build_examples_list(problem_examples(429, ("rate_limited",)))
    for item in result.get("paths", {}).values():
        for method, operation in item.items():
            if method == "parameters" or not isinstance(operation, dict):
                continue
            if not any("apiKey" in scheme for scheme in operation.get("security", [])):
                continue
            responses = operation.setdefault("responses", {})
            if "429" not in responses:
                responses["429"] = {
                    "description": PROBLEM_DESCRIPTIONS[429],
                    "content": {
                        PROBLEM_JSON: {
                            "schema": {"$ref": "#/components/schemas/Problem"},
                            "examples": example,
                        }
                    },
                }
                continue
            media = responses["429"].setdefault("content", {}).setdefault(PROBLEM_JSON, {})
            media.setdefault("schema", {"$ref": "#/components/schemas/Problem"})
            examples = media.setdefault("examples", {})
            for name, value in example.items():
                examples.setdefault(name, value)
    return result


def _camel(name: str) -> str:
    """A wire name, as the API's renderer camelizes the bodies' keys (``item_id``: ``itemId``)."""
    return camelize_re.sub(underscore_to_camel, name)


def camelize_path_parameters(result, generator, request, public):
    """Path parameters named in camelCase, as every name on the wire (contract section 1) and
    as the spec names them (``DELETE /cart/items/:itemId``): ``{item_id}`` of the URL patterns
    becomes ``{itemId}``. A drf-spectacular postprocessing hook."""
    paths = result.get("paths", {})
    renamed = {}
    for path, item in paths.items():
        for operation in item.values():
            if not isinstance(operation, dict):
                continue
            for parameter in operation.get("parameters", []):
                if parameter.get("in") == "path":
                    parameter["name"] = _camel(parameter["name"])
        renamed[re.sub(r"{([^}]+)}", lambda match: "{" + _camel(match[1]) + "}", path)] = item
    result["paths"] = renamed
    return result
