from django.urls import path

from orders import apis, apis_agents, batch_apis

urlpatterns = [
    path("cart", apis.CartApi.as_view(), name="cart"),
    path("cart/items", apis.CartItemsApi.as_view(), name="cart-items"),
    path("cart/items/<id:item_id>", apis.CartItemApi.as_view(), name="cart-item"),
    path("payments/quote", apis.QuoteApi.as_view(), name="payments-quote"),
    path("payments/history", apis.PaymentHistoryApi.as_view(), name="payments-history"),
    path("payments/<id:payment_id>", apis.PaymentDetailApi.as_view(), name="payment"),
    path("wallet/checkout", apis.WalletCheckoutApi.as_view(), name="wallet-checkout"),
    path("api-access/b2b/recharges", apis.B2BRechargeApi.as_view(), name="b2b-recharges"),
    path(
        "api-access/b2b/recharges/<id:recharge_id>",
        apis.RechargeDetailApi.as_view(),
        name="b2b-recharge",
    ),
    path("api-access/b2b/batches", batch_apis.BatchesApi.as_view(), name="b2b-batches"),
    path("api-access/b2b/batches/<id:batch_id>", batch_apis.BatchApi.as_view(), name="b2b-batch"),
    path(
        "api-access/b2b/batches/<id:batch_id>/results.csv",
        batch_apis.BatchResultsApi.as_view(),
        name="b2b-batch-results",
    ),
    path("api-access/sandbox", apis.SandboxApi.as_view(), name="sandbox"),
    # A network agent's recharges and payments, read by an ancestor (section 18): rendered
    # here as the caller's own are; the other /network/ routes are network/urls_api.py's.
    path(
        "network/agents/<id:agent_id>/recharges",
        apis_agents.AgentRechargesApi.as_view(),
        name="network-agent-recharges",
    ),
    path(
        "network/agents/<id:agent_id>/payments",
        apis_agents.AgentPaymentsApi.as_view(),
        name="network-agent-payments",
    ),
]
