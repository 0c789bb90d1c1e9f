from django.contrib.auth import views as auth_views
from django.urls import path, reverse_lazy

from accounts import views

app_name = "accounts"

urlpatterns = [
    path("signup/", views.signup, name="signup"),
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", views.LogoutView.as_view(), name="logout"),
    path("profile/", views.profile, name="profile"),
    path("keys/", views.api_keys, name="api-keys"),
    path("keys/new/", views.api_key_create, name="api-key-create"),
    path("keys/<id:key_id>/", views.api_key_detail, name="api-key"),
    path("keys/<id:key_id>/revoke/", views.api_key_revoke, name="api-key-revoke"),
    path(
        "keys/<id:key_id>/sandbox/topup/",
        views.api_key_sandbox_topup,
        name="api-key-sandbox-topup",
    ),
    path(
        "password/",
        auth_views.PasswordChangeView.as_view(
            template_name="accounts/password.html",
            success_url=reverse_lazy("accounts:profile"),
        ),
        name="password",
    ),
]
