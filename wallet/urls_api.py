from django.urls import path

from wallet import apis

urlpatterns = [
    path("wallet/balance", apis.BalanceApi.as_view(), name="wallet-balance"),
    path("wallet/statement", apis.StatementApi.as_view(), name="wallet-statement"),
]
