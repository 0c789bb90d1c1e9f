"""A network agent's recharges and payments, read by an ancestor (contract section 18):
``/network/agents/{id}/recharges`` and ``/payments``. They render as the caller's own lists
do (``recharge_search_response``, ``payment_history_response``), so they live here, above the
network: the network app finds the agent (404 outside the caller's branch, whatever the role)
and checks the role (403); live data only (a test key is refused). The agent's PINs and
its lines' extra fields are its own (contract section 17): an ancestor reads ``pin`` null and
``fields`` empty."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.views import APIView

from accounts.authentication import request_livemode
from network.agents import agent_readable
from orders.apis import payment_history_response, recharge_search_response
from orders.serializers import PaymentOut
from recharges.models import Recharge
from recharges.serializers import RechargeDetailOut
from reseller import openapi_examples as ex
from reseller.api import problems
from reseller.pagination import PagePagination

AGENT_ID = OpenApiParameter(
    "agent_id", str, OpenApiParameter.PATH, description="`acc_…`: any agent of your branch."
)
ROLE_NOTE = (
    " Owners and finance members; developers and test keys get 403. An id outside your "
    "branch is 404, whatever your role. A PIN and a line's extra fields are the buyer's "
    "only: here `pin` is null and `fields` empty."
)


class AgentRechargesApi(APIView):
    pagination_class = PagePagination

    @extend_schema(
        tags=["network"],
        operation_id="network_agents_recharges",
        summary="An agent's recharges, newest first",
        description="The live recharges of any descendant, with the filters of "
        "`GET /api-access/b2b/recharges`." + ROLE_NOTE,
        parameters=[
            AGENT_ID,
            OpenApiParameter("status", str, many=True, enum=Recharge.Status.values),
            OpenApiParameter("recipientNumber", str),
            OpenApiParameter("orderId", str),
            OpenApiParameter("createdAfter", OpenApiTypes.DATETIME),
            OpenApiParameter("createdBefore", OpenApiTypes.DATETIME),
            OpenApiParameter("idempotencyKey", str),
            OpenApiParameter("page", int),
            OpenApiParameter("limit", int),
        ],
        examples=[ex.response("Delivered", ex.recharge_detail())],
        responses={200: RechargeDetailOut(many=True), **problems(400, 401, 403, 404)},
    )
    def get(self, request, agent_id: str):
        agent = agent_readable(
            user=request.user, livemode=request_livemode(request), agent_id=agent_id
        )
        return recharge_search_response(self, request, account=agent, livemode=True, buyer=False)


class AgentPaymentsApi(APIView):
    pagination_class = PagePagination

    @extend_schema(
        tags=["network"],
        operation_id="network_agents_payments",
        summary="An agent's payments, newest first",
        description="The live payments of any descendant, as `GET /payments/history` shows "
        "your own." + ROLE_NOTE,
        parameters=[AGENT_ID, OpenApiParameter("page", int), OpenApiParameter("limit", int)],
        examples=[ex.response("A wallet payment", ex.PAID)],
        responses={200: PaymentOut(many=True), **problems(400, 401, 403, 404)},
    )
    def get(self, request, agent_id: str):
        agent = agent_readable(
            user=request.user, livemode=request_livemode(request), agent_id=agent_id
        )
        return payment_history_response(self, request, account=agent, livemode=True, buyer=False)
