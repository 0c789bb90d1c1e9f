"""The network's API (contract section 18): /api/v1/network/…"""

from django.urls import URLPattern, URLResolver, path

from network import apis_agents, apis_money, apis_price_lists

urlpatterns: list[URLPattern | URLResolver] = [
    # Agents (an agent's recharges and payments: orders/urls_api.py, rendered by orders).
    path("agents", apis_agents.AgentsApi.as_view(), name="network-agents"),
    path("agents/<id:agent_id>", apis_agents.AgentApi.as_view(), name="network-agent"),
    path(
        "agents/<id:agent_id>/statement",
        apis_agents.AgentStatementApi.as_view(),
        name="network-agent-statement",
    ),
    # Price lists (network/apis_price_lists.py)
    path("price-lists", apis_price_lists.PriceListsApi.as_view(), name="network-price-lists"),
    path(
        "price-lists/<id:price_list_id>",
        apis_price_lists.PriceListApi.as_view(),
        name="network-price-list",
    ),
    # Money: transfers and commissions (network/apis_money.py)
    path("transfers", apis_money.TransfersApi.as_view(), name="network-transfers"),
    path("commissions", apis_money.CommissionsApi.as_view(), name="network-commissions"),
]
