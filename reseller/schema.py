"""drf-spectacular extensions: how our authentication classes appear in the OpenAPI schema."""

from drf_spectacular.authentication import SessionScheme
from drf_spectacular.extensions import OpenApiAuthenticationExtension


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
