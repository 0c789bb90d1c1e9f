"""The network's API (contract section 18): /api/v1/network/…"""

from django.urls import URLPattern, URLResolver, path

from network import apis_price_lists

urlpatterns: list[URLPattern | URLResolver] = [
    # Price lists (network/apis_price_lists.py)
    path("price-lists", apis_price_lists.PriceListsApi.as_view(), name="network-price-lists"),
    path(
        "price-lists/<id:price_list_id>",
        apis_price_lists.PriceListApi.as_view(),
        name="network-price-list",
    ),
]
