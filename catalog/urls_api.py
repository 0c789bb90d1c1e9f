from django.urls import path

from catalog import apis

urlpatterns = [
    path("catalog/countries", apis.CountryListApi.as_view(), name="catalog-countries"),
    path("catalog/operators", apis.OperatorListApi.as_view(), name="catalog-operators"),
    path(
        "catalog/recharge-products",
        apis.ProductListApi.as_view(),
        name="catalog-recharge-products",
    ),
    path(
        "catalog/recharge-products/<id:product_id>",
        apis.ProductDetailApi.as_view(),
        name="catalog-recharge-product",
    ),
]
