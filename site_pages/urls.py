"""The routes of the site pages. The home page is the site's root (``urlpatterns``, included
as it is). The others keep the namespace and the addresses of the app whose pages they are:
reseller/urls.py includes each list together with that app's own routes, in one include per
namespace, so ``{% url 'accounts:api-key' %}`` and the role table (accounts/roles.py) name
these pages as before they moved here."""

from django.urls import path, re_path

from site_pages import views

urlpatterns = [path("", views.home, name="home")]

# Under accounts/, namespace "accounts".
accounts = [
    path("keys/", views.api_keys, name="api-keys"),
    path("keys/<id:key_id>/", views.api_key_detail, name="api-key"),
    path(
        "keys/<id:key_id>/sandbox/topup/",
        views.api_key_sandbox_topup,
        name="api-key-sandbox-topup",
    ),
]

# Under catalog/, namespace "catalog".
catalog = [
    re_path(r"^(?P<code>[A-Za-z]{2})/(?P<slug>[-\w]+)/$", views.operator, name="operator"),
]

# Under wallet/, namespace "wallet".
wallet = [
    path("statement/", views.statement, name="statement"),
]
