from django.conf import settings
from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from accounts import urls as accounts_urls
from accounts import views as account_views
from catalog import urls as catalog_urls
from reseller import views
from site_pages import urls as site_pages_urls
from wallet import urls as wallet_urls

api_v1: list[URLPattern | URLResolver] = [
    path("", include("accounts.urls_api")),
    path("", include("catalog.urls_api")),
    path("", include("checkout.urls_api")),  # before orders': payments/<id> takes any word
    path("", include("orders.urls_api")),
    path("", include("wallet.urls_api")),
    path("network/", include("network.urls_api")),
    path("", include("backoffice.urls_api")),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    # Swagger UI's start-up script is served as its own file (?script): our CSP allows no
    # inline script, and the page must render in a browser, not just answer 200.
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    # Where a problem's ``type`` points: a page per error code (reseller.problem_types).
    path("docs/errors/", views.error_codes, name="api-errors"),
    path("docs/errors/<slug:code>", views.error_code, name="api-error"),
]
if settings.BENCH_ENDPOINTS:  # the benchmark's floor (bench.floor); off by default
    api_v1.append(path("_bench/", include("bench.floor.apis")))

urlpatterns = [
    path("api/v1/", include(api_v1)),
    path("admin/", admin.site.urls),
    path("i18n/setlang/", account_views.set_language, name="set_language"),
    path("healthz", views.healthz, name="healthz"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("", include("metrics.urls")),
    path("accounts/webhooks/", include("webhooks.urls")),
    path("accounts/keys/", include("requestlog.urls")),
    # An app's routes and its site pages (site_pages/urls.py) in one include: one namespace,
    # unique (urls.W005), where every name reverses as before the pages moved up.
    path("accounts/", include((accounts_urls.urlpatterns + site_pages_urls.accounts, "accounts"))),
    path("catalog/", include((catalog_urls.urlpatterns + site_pages_urls.catalog, "catalog"))),
    path("", include("orders.urls")),
    path("", include("checkout.urls")),
    path("", include("recharges.urls")),
    path("wallet/", include((wallet_urls.urlpatterns + site_pages_urls.wallet, "wallet"))),
    path("recipients/", include("recipients.urls")),
    path("network/", include("network.urls")),
    path("", include("site_pages.urls")),
]


handler400 = "reseller.views.bad_request"
handler403 = "reseller.views.permission_denied"
handler404 = "reseller.views.page_not_found"
handler500 = "reseller.views.server_error"
