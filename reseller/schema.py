"""drf-spectacular extensions: how our authentication classes appear in the OpenAPI schema."""

from drf_spectacular.authentication import SessionScheme


class SiteSessionScheme(SessionScheme):
    target_class = "reseller.api.SessionAuthentication"
    name = "siteSession"
