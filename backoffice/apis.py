"""The /api/v1/admin/* endpoints: staff only (session, JWT, or a staff user's API key)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.generics import ListAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.permissions import StaffRequired
from backoffice import selectors
from backoffice.serializers import (
    AdminPaymentOut,
    AdminProductOut,
    AdminProviderOut,
    AdminRechargeOut,
    AdminReconciliationOut,
    AdminSummaryOut,
    AdminUserOut,
    PaymentQuery,
    ProductQuery,
    RechargeQuery,
    ReconciliationQuery,
    UserQuery,
    selector_kwargs,
)
from reconciliation.selectors import runs_list
from reseller import openapi_examples as ex
from reseller.api import problems
from upstreams.selectors import providers_overview

TAG = ["admin"]
STAFF_PROBLEMS = problems(400, 401, 403, 429)
AUTH_NOTE = (
    " Staff only: a staff user's session, JWT or API key; others get 403 `permission_denied`."
)


def _param(name: str, description: str, **kwargs) -> OpenApiParameter:
    return OpenApiParameter(
        name=name,
        location=OpenApiParameter.QUERY,
        required=False,
        description=description,
        **kwargs,
    )


DATE_PARAMS = [
    _param("createdFrom", "Created at or after: a date (`2026-11-01`) or an RFC 3339 time."),
    _param("createdTo", "Created before this time; a date includes that whole day."),
    _param("mode", "`live` or `test` data only.", enum=["live", "test"]),
]


class StaffListApi(ListAPIView):
    """A filtered staff list in the envelope of docs/contract.md §1."""

    permission_classes = [StaffRequired]
    filter_backends: list = []
    query_class = None
    selector = None

    def get_queryset(self):
        filters = selector_kwargs(self.query_class.parse(self.request))
        return type(self).selector(**filters)


class SummaryApi(APIView):
    permission_classes = [StaffRequired]

    @extend_schema(
        tags=TAG,
        operation_id="admin_summary",
        summary="Dashboard summary",
        description="Users, B2B accounts, active keys; live payments and recharges (counts and "
        "sums per currency) for today, 7 and 30 days; recharges by status; success rate; wallet "
        "float; pending bank top-ups." + AUTH_NOTE,
        examples=[ex.response("Summary", ex.ADMIN_SUMMARY)],
        responses={200: AdminSummaryOut, **problems(401, 403, 429)},
    )
    def get(self, request):
        return Response(AdminSummaryOut(selectors.summary()).data)


class UsersApi(StaffListApi):
    serializer_class = AdminUserOut
    query_class = UserQuery  # type: ignore[assignment]
    selector = staticmethod(selectors.users_list)  # type: ignore[assignment]

    @extend_schema(
        tags=TAG,
        operation_id="admin_users",
        summary="Users",
        description="Users with their account, live wallet and active key count, newest first."
        + AUTH_NOTE,
        parameters=[
            _param("q", "Search email, name, account name or user id."),
            _param("isB2b", "Only users of B2B (true) or non-B2B (false) accounts.", type=bool),
            _param("isStaff", "Only staff (true) or non-staff (false).", type=bool),
        ],
        examples=[ex.response("A B2B reseller", ex.ADMIN_USER)],
        responses={200: AdminUserOut(many=True), **STAFF_PROBLEMS},
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


class RechargesApi(StaffListApi):
    serializer_class = AdminRechargeOut
    query_class = RechargeQuery  # type: ignore[assignment]
    selector = staticmethod(selectors.recharges_list)  # type: ignore[assignment]

    @extend_schema(
        tags=TAG,
        operation_id="admin_recharges",
        summary="Recharges",
        description="Every recharge of every account, newest first." + AUTH_NOTE,
        parameters=[
            _param("status", "One or more statuses, comma-separated (`failed,queued`)."),
            _param("account", "Account id (`acc_…`)."),
            _param("operator", "Operator id."),
            _param("country", "Country code (`MX`)."),
            _param("recipientNumber", "Exact recipient number (E.164)."),
            *DATE_PARAMS,
        ],
        examples=[ex.response("Delivered", ex.ADMIN_RECHARGE)],
        responses={200: AdminRechargeOut(many=True), **STAFF_PROBLEMS},
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


class PaymentsApi(StaffListApi):
    serializer_class = AdminPaymentOut
    query_class = PaymentQuery  # type: ignore[assignment]
    selector = staticmethod(selectors.payments_list)  # type: ignore[assignment]

    @extend_schema(
        tags=TAG,
        operation_id="admin_payments",
        summary="Payments",
        description="Every payment of every account, newest first." + AUTH_NOTE,
        parameters=[
            _param("status", "One or more statuses, comma-separated (`captured,refunded`)."),
            _param("method", "`wallet` or `card`.", enum=["wallet", "card"]),
            _param("account", "Account id (`acc_…`)."),
            _param("currency", "ISO 4217 currency."),
            *DATE_PARAMS,
        ],
        examples=[ex.response("Wallet payment", ex.ADMIN_PAYMENT)],
        responses={200: AdminPaymentOut(many=True), **STAFF_PROBLEMS},
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


class ProductsApi(StaffListApi):
    serializer_class = AdminProductOut
    query_class = ProductQuery  # type: ignore[assignment]
    selector = staticmethod(selectors.products_list)  # type: ignore[assignment]

    @extend_schema(
        tags=TAG,
        operation_id="admin_products",
        summary="Products",
        description="The whole catalog, inactive products included, with live recharges of the "
        "last 30 days per product." + AUTH_NOTE,
        parameters=[
            _param("q", "Search name, SKU or product id."),
            _param("country", "Country code (`MX`)."),
            _param("operator", "Operator id."),
            _param("active", "Only active (true) or inactive (false) products.", type=bool),
            _param(
                "offered",
                "Only products offered (true) or not (false): priced too close to their cost.",
                type=bool,
            ),
        ],
        examples=[ex.response(ex.PRODUCT_NAME, ex.ADMIN_PRODUCT)],
        responses={200: AdminProductOut(many=True), **STAFF_PROBLEMS},
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


class ProvidersApi(StaffListApi):
    """A list in §1's envelope like every other, though there are only ever a few."""

    serializer_class = AdminProviderOut

    def get_queryset(self):
        return providers_overview()

    @extend_schema(
        tags=TAG,
        operation_id="admin_providers",
        summary="Upstream providers",
        description=(
            "Every upstream provider with its circuit state, balance, success rate and "
            "p50/p95 latency over the last 15 minutes, and its calls in flight now "
            "(docs/providers.md). Never its secrets." + AUTH_NOTE
        ),
        examples=[ex.response("DT One", ex.ADMIN_PROVIDER)],
        responses={200: AdminProviderOut(many=True), **STAFF_PROBLEMS},
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


class ReconciliationsApi(StaffListApi):
    serializer_class = AdminReconciliationOut
    query_class = ReconciliationQuery  # type: ignore[assignment]

    def get_queryset(self):
        filters = ReconciliationQuery.parse(self.request)
        return runs_list(provider=filters.get("provider", ""), day=filters.get("date"))

    @extend_schema(
        tags=TAG,
        operation_id="admin_reconciliations",
        summary="Reconciliation runs",
        description=(
            "Every reconciliation run, newest first: a provider's transaction report for one "
            "UTC day matched with our recharges by reference (docs/providers.md). Each run has "
            "its counts (matched, missing here, missing there, mismatched, reversals applied), "
            "its `mismatches` (missing on either side, amount or status) and the `reversals` "
            "it applied." + AUTH_NOTE
        ),
        parameters=[
            _param("provider", "A provider's name."),
            _param("date", "The day reconciled (`2026-11-21`, UTC).", type=str),
        ],
        examples=[ex.response("One status mismatch", ex.ADMIN_RECONCILIATION)],
        responses={200: AdminReconciliationOut(many=True), **STAFF_PROBLEMS},
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)
