"""Agents on the API (contract section 18): /network/agents, one agent, its statement.

An id outside the caller's branch is 404 whatever the caller's role; inside it, a role that
may not manage the network (developers, a test key) is 403. The role is therefore checked by
the views after the lookup, not by the role middleware (``accounts.roles.ANY_ROLE``). An
agent's recharges and payments are read through ``orders.apis_agents`` (orders renders
them, above the network)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import request_livemode
from network import agents
from network.serializers_agents import AgentCreateIn, AgentOut, AgentPatchIn
from reseller import openapi_examples as ex
from reseller.api import problems
from reseller.pagination import PagePagination
from wallet.apis import STATEMENT_PARAMETERS, statement_response, statement_responses
from wallet.services import wallet_get_or_create

AGENT = {
    "id": "acc_2b7QkT9xVfLmN3pR",
    "name": "Kiosco Centro",
    "parent": "acc_7Hc2mQ9sKd4LpX1z",
    "level": 2,
    "status": "active",
    "priceList": "prl_5Jd8sKq2LmW9xT3v",
    "balance": "250.00",
    "currency": "EUR",
    "sales30d": "1840.50",
    "createdAt": "2026-11-02T09:15:00Z",
}
AGENT_NEW = {**AGENT, "balance": "0.00", "sales30d": "0.00"}
AGENT_CREATE = {
    "name": "Kiosco Centro",
    "ownerEmail": "luis@kiosco-centro.example",
    "priceList": "prl_5Jd8sKq2LmW9xT3v",
}
AGENT_ID = OpenApiParameter(
    "agent_id", str, OpenApiParameter.PATH, description="`acc_…`: an agent in your branch."
)
ROLE_NOTE = (
    " Owners and finance members; developers and test keys get 403. An id outside your "
    "branch is 404, whatever your role."
)


def acting_account(request):
    """The caller's account, once its role may manage the network (403 otherwise)."""
    agents.network_may_act(user=request.user, livemode=request_livemode(request))
    return request.user.account


def agent_of_branch(request, agent_id: str):
    return agents.agent_readable(
        user=request.user, livemode=request_livemode(request), agent_id=agent_id
    )


class AgentsApi(APIView):
    pagination_class = PagePagination

    @extend_schema(
        tags=["network"],
        operation_id="network_agents_list",
        summary="Your direct agents, with their balance and last 30 days' sales",
        description="Oldest first. `sales30d`: what the agent's payments of the last 30 days "
        "came to, less refunds." + ROLE_NOTE,
        parameters=[OpenApiParameter("page", int), OpenApiParameter("limit", int)],
        examples=[ex.response("One agent", AGENT)],
        responses={200: AgentOut(many=True), **problems(400, 401, 403)},
    )
    def get(self, request):
        account = acting_account(request)
        paginator = PagePagination()
        page = paginator.paginate_queryset(agents.agents_direct(account=account), request, self)
        return paginator.get_paginated_response(AgentOut(page, many=True).data)

    @extend_schema(
        tags=["network"],
        operation_id="network_agents_create",
        summary="Create an agent: a B2B account under yours",
        description="The agent's wallet is in your currency; `priceList` is one of your "
        "lists (none: the agent pays your price). `ownerEmail` gets an invitation to choose "
        "a password, as a team invitation does (the link works once, for 7 days). 409 "
        "`email_taken` when the address already has a user or an invitation waiting for it; "
        "409 `network_too_deep` past `NETWORK_MAX_DEPTH` levels (a top account is level 1)."
        + ROLE_NOTE,
        request=AgentCreateIn,
        examples=ex.exchange("Create an agent", AGENT_CREATE, AGENT_NEW, status=201),
        responses={
            201: AgentOut,
            **problems(400, 401, 403, 409, extra=("email_taken", "network_too_deep")),
        },
    )
    def post(self, request):
        parent = acting_account(request)
        data = AgentCreateIn(data=request.data)
        data.is_valid(raise_exception=True)
        agent = agents.agent_create(
            parent=parent,
            by=request.user,
            name=data.validated_data["name"],
            owner_email=data.validated_data["owner_email"],
            price_list_id=data.validated_data.get("price_list"),
            site_url=request.build_absolute_uri("/"),
        )
        shown = agents.agent_in_branch(account=parent, agent_id=agent.public_id)
        return Response(AgentOut(shown).data, status=201)


class AgentApi(APIView):
    @extend_schema(
        tags=["network"],
        operation_id="network_agents_retrieve",
        summary="An agent of your branch",
        description="Any descendant (your agents and theirs)." + ROLE_NOTE,
        parameters=[AGENT_ID],
        examples=[ex.response("An agent", AGENT)],
        responses={200: AgentOut, **problems(401, 403, 404)},
    )
    def get(self, request, agent_id: str):
        return Response(AgentOut(agent_of_branch(request, agent_id)).data)

    @extend_schema(
        tags=["network"],
        operation_id="network_agents_update",
        summary="Suspend, resume, rename or price an agent",
        description="`status: suspended` refuses the agent's API keys, JWTs and site "
        "sessions, and those of its own agents, from the next request on (403 "
        "`account_suspended`); `active` restores them: any descendant, unless an account "
        "above yours (or our staff) suspended it (403 `permission_denied`). `name` and "
        "`priceList` (one of your lists, or null for none) are for your direct agents: a "
        "deeper one's parent sets them (403 `permission_denied` here)." + ROLE_NOTE,
        parameters=[AGENT_ID],
        request=AgentPatchIn,
        examples=ex.exchange("Suspend", {"status": "suspended"}, {**AGENT, "status": "suspended"}),
        responses={200: AgentOut, **problems(400, 401, 403, 404)},
    )
    def patch(self, request, agent_id: str):
        account = request.user.account
        agent = agents.agent_readable(
            user=request.user, livemode=request_livemode(request), agent_id=agent_id
        )
        data = AgentPatchIn(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        changes = {
            field: data.validated_data[source]
            for field, source in (("name", "name"), ("status", "status"))
            if source in data.validated_data
        }
        if "price_list" in data.validated_data:
            changes["price_list_id"] = data.validated_data["price_list"]
        agents.agent_update(account=account, agent=agent, **changes)
        shown = agents.agent_in_branch(account=account, agent_id=agent_id)
        return Response(AgentOut(shown).data)


class AgentStatementApi(APIView):
    @extend_schema(
        tags=["network"],
        operation_id="network_agents_statement",
        summary="An agent's wallet statement",
        description="The live wallet of any descendant, as `GET /wallet/statement` shows your "
        "own (`from`, `to`, `format=json|csv|xlsx`)." + ROLE_NOTE,
        parameters=[AGENT_ID, *STATEMENT_PARAMETERS],
        responses=statement_responses(400, 401, 403, 404),
    )
    def get(self, request, agent_id: str):
        agent = agent_of_branch(request, agent_id)
        return statement_response(request, wallet=wallet_get_or_create(account=agent))

    def perform_content_negotiation(self, request, force=False):
        # ``format`` names the file here, not a DRF renderer: never a 404 for csv or xlsx.
        return super().perform_content_negotiation(request, force=True)
