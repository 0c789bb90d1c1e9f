"""The list envelope of docs/contract.md §1: ?page=&limit= (max 100)."""

from __future__ import annotations

from django.core.paginator import InvalidPage
from django.utils.translation import gettext_lazy as _
from rest_framework import serializers
from rest_framework.pagination import PageNumberPagination
from rest_framework.response import Response

from reseller.errors import ValidationFailed, flatten_validation_errors


class PageQuery(serializers.Serializer):
    page = serializers.IntegerField(min_value=1, required=False, default=1)
    limit = serializers.IntegerField(min_value=1, max_value=100, required=False, default=20)


class PagePagination(PageNumberPagination):
    page_query_param = "page"
    page_size_query_param = "limit"
    page_size = 20
    max_page_size = 100

    def paginate_queryset(self, queryset, request, view=None):
        query = PageQuery(
            data={k: v for k, v in request.query_params.items() if k in ("page", "limit")}
        )
        if not query.is_valid():
            raise ValidationFailed(
                _("Invalid pagination parameters."),
                fields=flatten_validation_errors(query.errors),
            )
        self.limit = query.validated_data["limit"]
        self.page_number = query.validated_data["page"]
        paginator = self.django_paginator_class(queryset, self.limit)
        self.request = request
        try:
            self.page = paginator.page(self.page_number)
        except InvalidPage:
            # A page past the end is empty, not an error: the count says how many there are.
            self.page = None
            self._count = paginator.count
            return []
        self._count = paginator.count
        return list(self.page)

    def get_next_link(self):
        if self.page is None or not self.page.has_next():
            return None
        return self._link(self.page.next_page_number())

    def get_previous_link(self):
        if self.page is None or not self.page.has_previous():
            return None
        return self._link(self.page.previous_page_number())

    def _link(self, number: int) -> str:
        from rest_framework.utils.urls import replace_query_param

        url = self.request.build_absolute_uri()  # type: ignore[union-attr]
        url = replace_query_param(url, "limit", self.limit)
        return replace_query_param(url, "page", number)

    def get_paginated_response(self, data):
        return Response(
            {
                "results": data,
                "count": self._count,
                "page": self.page_number,
                "limit": self.limit,
                "next": self.get_next_link(),
                "previous": self.get_previous_link(),
            }
        )

    def get_paginated_response_schema(self, schema):
        return {
            "type": "object",
            "required": ["results", "count", "page", "limit", "next", "previous"],
            "properties": {
                "results": schema,
                # The examples' envelope: their one result, on the only page.
                "count": {"type": "integer", "example": 1},
                "page": {"type": "integer", "example": 1},
                "limit": {"type": "integer", "example": 20},
                # OpenAPI 3.1 (JSON Schema): a null is a type of its own.
                "next": {"type": ["string", "null"], "format": "uri", "example": None},
                "previous": {"type": ["string", "null"], "format": "uri", "example": None},
            },
        }

    def get_schema_operation_parameters(self, view):
        return [
            {
                "name": "page",
                "in": "query",
                "required": False,
                "schema": {"type": "integer", "minimum": 1, "default": 1},
            },
            {
                "name": "limit",
                "in": "query",
                "required": False,
                "schema": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
            },
        ]
