"""Catalog API: countries, operators and recharge products (key+web: any authenticated caller).

Lists use the envelope of docs/contract.md §1 and refuse unknown query parameters, so a
typo (``?contry=MX``) is a 400 and not the whole catalog.
"""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.generics import ListAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from catalog import selectors
from catalog.filters import OperatorFilter, ProductFilter
from catalog.serializers import CountryOut, OperatorOut, ProductOut
from reseller import openapi_examples as ex
from reseller.api import problems
from reseller.errors import refuse_unknown_params

PAGE_PARAMS = {"page", "limit"}
LANGUAGE_NOTE = " Names and promotion texts are in the language of `Accept-Language` (en, es, fr)."


class CatalogListApi(ListAPIView):
    """A list with the envelope; refuses query parameters that it does not know."""

    def allowed_params(self) -> set[str]:
        filterset = getattr(self, "filterset_class", None)
        return PAGE_PARAMS | (set(filterset.base_filters) if filterset else set())

    def list(self, request, *args, **kwargs):
        refuse_unknown_params(request.query_params, allowed=self.allowed_params())
        return super().list(request, *args, **kwargs)


class CountryListApi(CatalogListApi):
    serializer_class = CountryOut

    def get_queryset(self):
        return selectors.country_list()

    @extend_schema(
        tags=["catalog"],
        summary="List the countries of the catalog",
        description="Countries with at least one operator, by English name." + LANGUAGE_NOTE,
        examples=[ex.response("Mexico", ex.COUNTRY_MX)],
        responses={200: CountryOut, **problems(400, 401, 403)},
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


class OperatorListApi(CatalogListApi):
    serializer_class = OperatorOut
    filterset_class = OperatorFilter

    def get_queryset(self):
        return selectors.operator_list()

    @extend_schema(
        tags=["catalog"],
        summary="List operators, or find the operator of a phone number",
        description="Operators by country and name. With `phone`, only the operators of the "
        "number's country, the detected one(s) first with `detected: true` and "
        "`detectedBy`: `provider` when a provider's number lookup named it (ported numbers "
        "show their new operator), `prefix` when the number's range did. The providers are "
        "asked where numbers are ported or the range cannot tell, for at most "
        "`NUMBER_LOOKUP_TIMEOUT_SECONDS`; without an answer the range decides, and some "
        "ranges are unknown: then no operator is detected. Errors: an invalid "
        "number is 400 with the field error code `invalid_phone_number`; a number of "
        "another country than `country` is `phone_country_mismatch`." + LANGUAGE_NOTE,
        examples=[ex.response("Telcel", ex.OPERATOR_TELCEL)],
        responses={200: OperatorOut, **problems(400, 401, 403)},
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


class ProductListApi(CatalogListApi):
    serializer_class = ProductOut
    filterset_class = ProductFilter

    def get_queryset(self):
        return selectors.product_list()

    @extend_schema(
        tags=["catalog"],
        summary="List recharge products",
        description="Active recharge products in catalog order (country, operator, type, face "
        "value). A product with an active or scheduled promotion carries it in `promotion` "
        "(name, description, terms, startsAt, endsAt, status); otherwise `promotion` is null. "
        "An unknown `country` or `operator`, a malformed price or an unknown parameter is "
        "400 `validation_error` naming the parameter. A `range` product (`denomination`) "
        "has no `localAmount` or `price`: the buyer chooses an amount within `range`, priced "
        "`A / pricing.rate + pricing.fee` rounded up to the cent; `minPrice` and `maxPrice` "
        "compare its price at the two ends of its range. The prices compared are those the "
        "response shows the caller: an agent of a reseller network its own. `type` is "
        "`airtime`, `data`, `bundle` or `pin` (the `type` filter takes each); data, bundles "
        "and PINs say what they give in `benefits` and `validity` where their provider "
        "does." + LANGUAGE_NOTE,
        examples=[
            ex.response(ex.PRODUCT_NAME, ex.product()),
            ex.response("A range product", ex.range_product()),
            ex.response("A bundle", ex.bundle_product()),
        ],
        responses={200: ProductOut, **problems(400, 401, 403)},
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def list(self, request, *args, **kwargs):
        refuse_unknown_params(request.query_params, allowed=self.allowed_params())
        at = timezone.now()
        queryset = self.filter_queryset(self.get_queryset())
        page = self.paginate_queryset(queryset)
        selectors.products_attach_promotions(products=page, at=at)
        data = ProductOut(page, many=True, context={"request": request, "at": at}).data
        return self.get_paginated_response(data)


class ProductDetailApi(APIView):
    @extend_schema(
        tags=["catalog"],
        summary="One recharge product",
        description="An active product by id; an unknown or withdrawn id is 404 `not_found`."
        + LANGUAGE_NOTE,
        parameters=[OpenApiParameter("product_id", str, OpenApiParameter.PATH)],
        examples=[
            ex.response(ex.PRODUCT_NAME, ex.product()),
            ex.response("A range product", ex.range_product()),
            ex.response("A bundle", ex.bundle_product()),
        ],
        responses={200: ProductOut, **problems(401, 403, 404)},
    )
    def get(self, request, product_id: str):
        at = timezone.now()
        product = selectors.product_get(product_id=product_id, at=at)
        return Response(ProductOut(product, context={"request": request, "at": at}).data)
