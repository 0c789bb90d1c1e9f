"""The routes of the site pages. Each list keeps the namespace and the addresses of the app
whose pages they are: reseller/urls.py includes it together with that app's own routes, in one
include per namespace, so ``{% url 'accounts:api-key' %}`` and the role table
(accounts/roles.py) name these pages as before they moved here."""

from django.urls import path

from site_pages import views

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
