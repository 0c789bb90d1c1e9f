"""The network's API (contract section 18): /api/v1/network/…"""

from django.urls import URLPattern, URLResolver, path

from network import apis_money

urlpatterns: list[URLPattern | URLResolver] = [
    # money: transfers and commissions (network/apis_money.py)
    path("transfers", apis_money.TransfersApi.as_view(), name="network-transfers"),
]
