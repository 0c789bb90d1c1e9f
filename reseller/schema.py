"""drf-spectacular extensions: how our authentication classes appear in the OpenAPI schema."""

from drf_spectacular.authentication import SessionScheme
from drf_spectacular.extensions import OpenApiAuthenticationExtension

from reseller.api import PROBLEM_DESCRIPTIONS


class SiteSessionScheme(SessionScheme):
    target_class = "reseller.api.SessionAuthentication"
    name = "siteSession"


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
            operation["responses"]["400"] = {
                "description": PROBLEM_DESCRIPTIONS[400],
                "content": {
                    "application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}
                },
            }
    return result
