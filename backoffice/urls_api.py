from django.urls import path

from backoffice import apis

urlpatterns = [
    path("admin/summary", apis.SummaryApi.as_view(), name="admin-summary"),
    path("admin/users", apis.UsersApi.as_view(), name="admin-users"),
    path("admin/recharges", apis.RechargesApi.as_view(), name="admin-recharges"),
    path("admin/payments", apis.PaymentsApi.as_view(), name="admin-payments"),
    path("admin/products", apis.ProductsApi.as_view(), name="admin-products"),
    path("admin/providers", apis.ProvidersApi.as_view(), name="admin-providers"),
    path("admin/reconciliations", apis.ReconciliationsApi.as_view(), name="admin-reconciliations"),
]
