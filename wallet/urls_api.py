from django.urls import path

from orders.card import apis as card_apis
from wallet import apis

urlpatterns = [
    path("wallet/balance", apis.BalanceApi.as_view(), name="wallet-balance"),
    path("wallet/statement", apis.StatementApi.as_view(), name="wallet-statement"),
    # Card top-ups of the wallet: the card flow (orders.card) paying a wallet top-up.
    path("wallet/topups/prepare", card_apis.TopUpPrepareApi.as_view(), name="topups-prepare"),
    path("wallet/topups/checkout", card_apis.TopUpCheckoutApi.as_view(), name="topups-checkout"),
]
