"""Price lists over the API (contract section 18, "Price lists"; docs/network.md): thin views.

An account's owners and finance members manage its lists, the ones it assigns to its direct
agents (accounts/roles.py: the money area; developers 403). Staff (a staff user's key, JWT or
session, with the back office's checks) manage the platform's lists, those staff assign to top
accounts. A list of anyone else, the one a parent assigned to the caller included, is 404
whatever the caller's role; then a role without the account's money, or a test key (prices are
live), is 403 ``permission_denied``.
"""

from __future__ import annotations

from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import request_api_key
from accounts.models import Account
from accounts.permissions import StaffRequired
from accounts.roles import MONEY, may, refusal_message
from network import price_lists as services
from network.models import PriceList
from network.serializers_price_lists import PriceListIn, PriceListOut, PriceListPut
from reseller import openapi_examples as ex
from reseller.api import problems
from reseller.errors import PermissionDenied
from reseller.pagination import PagePagination

RULES_NOTE = (
    " A rule names one of `country` (ISO code), `operator` (`opr_…`) or `product` (`prd_…`) "
    "with its `markupPercent` over the seller's own price; the most specific rule wins "
    "(product, then operator, then country), and a product no rule covers is sold at the "
    "seller's price. Your lists' markups are 0 to 1000 (an agent never buys below you: a "
    "negative one is 400 `validation_error`); the platform's lists (staff) may go down to "
    "over -100."
)
PATH_ID = OpenApiParameter("price_list_id", str, OpenApiParameter.PATH, description="`prl_…`")

EXAMPLE_REQUEST = {
    "name": "Shops",
    "rules": [
        {"country": "MX", "markupPercent": "5.00"},
        {"operator": "opr_Vj1NAMsVck11tvLxmHNI", "markupPercent": "4.00"},
        {"product": "prd_3kTMd2Yx8pQa1bWc9ZrE", "markupPercent": "3.50"},
    ],
}
EXAMPLE = {"id": "prl_7QmZ2cXv9LpR4tNw8KbY", **EXAMPLE_REQUEST}


def _may_manage(request) -> None:
    """403 unless the caller manages its account's lists: a live key or a person whose role
    has the account's money (owners and finance). Staff pass the back office's checks."""
    if request.user.is_staff:
        StaffRequired().check(request)
        return
    key = request_api_key(request)
    if key is not None and not key.livemode:
        raise PermissionDenied(_("A test key cannot use price lists: they are live prices."))
    if not may(request.user, MONEY):
        raise PermissionDenied(refusal_message(MONEY))


class PriceListManager(BasePermission):
    """The lists of the caller's account: who may manage them (``_may_manage``)."""

    def has_permission(self, request, view) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False
        _may_manage(request)
        return True


class PriceListCaller(BasePermission):
    """One list by its id: any signed-in caller, for the view to answer 404 for a list that
    is not its account's whatever the role, before ``_may_manage``'s 403 (contract section
    18, "Isolation")."""

    def has_permission(self, request, view) -> bool:
        return bool(request.user and request.user.is_authenticated)


def owner_of(request) -> Account | None:
    """Whose lists the caller manages: None (the platform's) for staff, else its account's."""
    return None if request.user.is_staff else request.user.account


def own_list(request, price_list_id: str) -> PriceList:
    """The caller's account's list (404 for any other, whatever the role), if the caller may
    manage it (else 403). Staff pass the back office's checks first: the platform's lists
    are not for a staff session without its second factor to probe."""
    staff = request.user.is_staff
    if staff:
        _may_manage(request)
    found = services.price_list_get(owner=owner_of(request), public_id=price_list_id)
    if not staff:
        _may_manage(request)
    return found


class PriceListsApi(APIView):
    permission_classes = [PriceListManager]
    pagination_class = PagePagination  # read by drf-spectacular: the 200 is the envelope

    @extend_schema(
        tags=["network"],
        operation_id="network_price_lists_list",
        summary="Your price lists",
        description="The lists you assign to your agents (staff: the platform's lists for top "
        "accounts), by name, with their rules.",
        examples=[ex.response("A list", EXAMPLE)],
        responses={200: PriceListOut(many=True), **problems(400, 401, 403)},
    )
    def get(self, request):
        paginator = PagePagination()
        page = paginator.paginate_queryset(
            services.price_list_list(owner=owner_of(request)), request, view=self
        )
        return paginator.get_paginated_response(PriceListOut(page, many=True).data)

    @extend_schema(
        tags=["network"],
        summary="Create a price list",
        description="A new list, its name unique among yours (else 400 `validation_error` "
        "naming `name`)." + RULES_NOTE,
        request=PriceListIn,
        examples=ex.exchange("Shops", EXAMPLE_REQUEST, EXAMPLE, status=201),
        responses={201: PriceListOut, **problems(400, 401, 403)},
    )
    def post(self, request):
        data = PriceListIn(data=request.data)
        data.is_valid(raise_exception=True)
        price_list = services.price_list_create(
            owner=owner_of(request), name=data.validated_data["name"], rules=data.specs()
        )
        return Response(PriceListOut(price_list).data, status=201)


class PriceListApi(APIView):
    permission_classes = [PriceListCaller]

    @extend_schema(
        tags=["network"],
        summary="One of your price lists",
        description="A list of someone else, the one your parent assigned you included, is "
        "404 `not_found`.",
        parameters=[PATH_ID],
        examples=[ex.response("A list", EXAMPLE)],
        responses={200: PriceListOut, **problems(401, 403, 404)},
    )
    def get(self, request, price_list_id: str):
        price_list = own_list(request, price_list_id)
        return Response(PriceListOut(price_list).data)

    @extend_schema(
        tags=["network"],
        summary="Replace a price list's name and rules",
        description="The accounts it prices pay the new prices from their next order." + RULES_NOTE,
        parameters=[PATH_ID],
        request=PriceListPut,
        examples=ex.exchange("Shops", EXAMPLE_REQUEST, EXAMPLE),
        responses={200: PriceListOut, **problems(400, 401, 403, 404)},
    )
    def put(self, request, price_list_id: str):
        price_list = own_list(request, price_list_id)
        data = PriceListPut(data=request.data, price_list_id=price_list.public_id)
        data.is_valid(raise_exception=True)
        price_list = services.price_list_update(
            price_list=price_list, name=data.validated_data["name"], rules=data.specs()
        )
        return Response(PriceListOut(price_list).data)

    @extend_schema(
        tags=["network"],
        summary="Delete a price list",
        description="A list assigned to an account is 409 `price_list_in_use`: assign its "
        "accounts another list (or none) first.",
        parameters=[PATH_ID],
        responses={204: None, **problems(401, 403, 404, 409, extra=("price_list_in_use",))},
    )
    def delete(self, request, price_list_id: str):
        price_list = own_list(request, price_list_id)
        services.price_list_delete(price_list=price_list)
        return Response(status=204)
