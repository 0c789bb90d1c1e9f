from django.conf import settings
from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from accounts import views as account_views
from catalog import views as catalog_views
from reseller import views

api_v1: list[URLPattern | URLResolver] = [
    path("", include("accounts.urls_api")),
    path("", include("catalog.urls_api")),
    path("", include("checkout.urls_api")),  # before orders': payments/<id> takes any word
    path("", include("orders.urls_api")),
    path("", include("wallet.urls_api")),
    path("", include("backoffice.urls_api")),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    # Swagger UI's start-up script is served as its own file (?script): our CSP allows no
    # inline script, and the page must render in a browser, not just answer 200.
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
]
if settings.BENCH_ENDPOINTS:  # the benchmark's floor (bench.floor); off by default
    api_v1.append(path("_bench/", include("bench.floor.apis")))

urlpatterns = [
    path("api/v1/", include(api_v1)),
    path("admin/", admin.site.urls),
    path("i18n/setlang/", account_views.set_language, name="set_language"),
    path("healthz", views.healthz, name="healthz"),
    path("accounts/webhooks/", include("webhooks.urls")),
    path("accounts/keys/", include("requestlog.urls")),
    path("accounts/", include("accounts.urls")),
    path("catalog/", include("catalog.urls")),
    path("", include("orders.urls")),
    path("", include("checkout.urls")),
    path("wallet/", include("wallet.urls")),
    path("recipients/", include("recipients.urls")),
    path("", catalog_views.home, name="home"),
]


handler404 = "reseller.views.page_not_found"
handler500 = "reseller.views.server_error"
