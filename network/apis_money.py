"""The network's money endpoints (contract section 18, docs/network.md): transfers between a
parent and its direct agents, and the commissions a parent earns on its branches. Thin views:
validate, call one service, render."""

from __future__ import annotations

import re

from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import ParseError, UnsupportedMediaType
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import request_api_key
from accounts.roles import MONEY, may, refusal_message
from network import agents, commissions, transfers
from network.serializers_money import (
    COMMISSIONS_EXAMPLE,
    TRANSFER_EXAMPLE,
    TRANSFER_REQUEST,
    CommissionsOut,
    TransferIn,
    TransferOut,
)
from reseller import openapi_examples as ex
from reseller.api import problems
from reseller.converters import PublicIdConverter
from reseller.errors import (
    PROBLEM_CONTENT_TYPE,
    NotFound,
    PermissionDenied,
    refuse_unknown_params,
)
from reseller.idempotency import IdempotentReply, fingerprint, read_key
from reseller.pagination import PagePagination
from wallet.statements import period_parse

TRANSFER_IDEMPOTENCY_HEADER = OpenApiParameter(
    name="Idempotency-Key",
    location=OpenApiParameter.HEADER,
    required=True,
    type=str,
    description="Unique per transfer (1-255 characters). A replay within 24 h returns the "
    "first answer with `Idempotent-Replayed: true` (a refusal included); a different body "
    "with the same key is 422; while the first is still running, 409.",
)


def live_money_refusal(request) -> PermissionDenied | None:
    """Why the caller may not move the network's money, or None. It is the live wallets': a
    web session or a live key, of an owner or a finance member. A test key acts on its sandbox
    balance only (docs/network.md)."""
    key = request_api_key(request)
    if key is not None and not key.livemode:
        return PermissionDenied(
            _("Transfers and commissions move live money: use a live key or a web session.")
        )
    if not may(request.user, MONEY):
        return PermissionDenied(refusal_message(MONEY))
    return None


class LiveMoneyOnly(IsAuthenticated):
    """``live_money_refusal`` as a permission: 403 ``permission_denied``."""

    def has_permission(self, request, view) -> bool:
        if not super().has_permission(request, view):
            return False
        refusal = live_money_refusal(request)
        if refusal is not None:
            raise refusal
        return True


def _named_agent(request) -> str | None:
    """The agent a transfer's body names (trimmed, as the serializer reads it), if it names
    one; else None, and the role decides."""
    try:
        data = request.data
    except (ParseError, UnsupportedMediaType):
        return None
    named = data.get("agent") if isinstance(data, dict) else None
    return (named.strip() or None) if isinstance(named, str) else None


def _in_branch(request, agent_id: str) -> bool:
    """Whether the id names an account below the caller's (never a database query for what
    cannot be an id: a NUL byte, say, which PostgreSQL refuses)."""
    if not re.fullmatch(PublicIdConverter.regex, agent_id):
        return False
    return agents.in_branch(account=request.user.account, agent_id=agent_id)


def _reply(reply: IdempotentReply) -> Response:
    response = Response(
        reply.body,
        status=reply.status,
        content_type=PROBLEM_CONTENT_TYPE if reply.is_problem else None,
    )
    if reply.replayed:
        response["Idempotent-Replayed"] = "true"
    return response


class TransfersApi(APIView):
    # The role is checked by the view, not by the route (accounts.roles): a transfer naming an
    # agent outside the caller's branch is 404 whatever the role (contract section 18).
    permission_classes = [IsAuthenticated]
    # Read by drf-spectacular: the 200 is documented as the page envelope, as it is sent.
    pagination_class = PagePagination

    @extend_schema(
        tags=["network"],
        operation_id="network_transfers_list",
        summary="The transfers you are a side of",
        description="Transfers between your wallet and your parent's or your direct agents', "
        "newest first, in the list envelope. Owners and finance members.",
        examples=[ex.response("One transfer", TRANSFER_EXAMPLE)],
        responses={200: TransferOut(many=True), **problems(400, 401, 403)},
    )
    def get(self, request):
        refusal = live_money_refusal(request)
        if refusal is not None:
            raise refusal
        refuse_unknown_params(request.query_params, allowed={"page", "limit"})
        paginator = PagePagination()
        page = paginator.paginate_queryset(
            transfers.transfers_of(account=request.user.account), request, view=self
        )
        return paginator.get_paginated_response([transfers.transfer_body(t) for t in page])

    @extend_schema(
        tags=["network"],
        operation_id="network_transfers_create",
        summary="Move money between your wallet and a direct agent's",
        description="`to_agent` takes the amount from your wallet and gives it to the agent's; "
        "`from_agent` takes it back. One transaction, a ledger entry on each wallet "
        "(`transfer_out`, `transfer_in`, shown in both statements) and a "
        "`network.transfer.completed` event to both accounts. Only a DIRECT agent: any other "
        "id is 404. The giving wallet never goes below zero (402). Owners and finance members; "
        "developers and test keys get 403, except that an agent outside your branch is 404 "
        "whatever your role.",
        parameters=[TRANSFER_IDEMPOTENCY_HEADER],
        request=TransferIn,
        examples=ex.exchange("Fund an agent", TRANSFER_REQUEST, TRANSFER_EXAMPLE, status=201),
        responses={
            201: TransferOut,
            **problems(
                400,
                401,
                402,
                403,
                404,
                409,
                422,
                extra=("currency_mismatch", "idempotency_key_required"),
            ),
        },
    )
    def post(self, request):
        refusal = live_money_refusal(request)
        if refusal is not None:
            named = _named_agent(request)
            if named is not None and not _in_branch(request, named):
                raise NotFound()
            raise refusal
        key = read_key(request.headers.get("Idempotency-Key"), required=True)
        data = TransferIn(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        reply = transfers.transfer_create(
            parent=request.user.account,
            agent_id=values["agent"],
            amount=values["amount"],
            currency=values["currency"],
            direction=values["direction"],
            memo=values["memo"],
            by=request.user,
            idempotency_key=key,
            request_fingerprint=fingerprint(
                method=request.method, path=request.path, body=request.data
            ),
            request_id=getattr(request, "request_id", None),
        )
        return _reply(reply)


class CommissionsApi(APIView):
    permission_classes = [LiveMoneyOnly]

    @extend_schema(
        tags=["network"],
        operation_id="network_commissions",
        summary="What you earned on your agents' sales",
        description="`from` and `to` are UTC days (YYYY-MM-DD, both included; default: this "
        "month so far). Per direct agent (every one, in the order `GET /network/agents` lists "
        "them; zeros for a branch that sold nothing): the recharges delivered in its branch "
        "(it and its agents) in the period and not reversed since, `sales` what the buying "
        "accounts paid for them, and `commission` your share of them (what your child paid "
        "less your own price, credited to your wallet at delivery); `total` the sum. Owners "
        "and finance members.",
        parameters=[
            OpenApiParameter("from", OpenApiTypes.DATE),
            OpenApiParameter("to", OpenApiTypes.DATE),
        ],
        examples=[ex.response("November so far", COMMISSIONS_EXAMPLE)],
        responses={200: CommissionsOut, **problems(400, 401, 403)},
    )
    def get(self, request):
        refuse_unknown_params(request.query_params, allowed={"from", "to"})
        period = period_parse(
            start=request.query_params.get("from"), end=request.query_params.get("to")
        )
        return Response(
            commissions.commissions_report(
                account=request.user.account,
                since=period.since,
                until=period.until,
                start=period.start,
                end=period.end,
            )
        )
