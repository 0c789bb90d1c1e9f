from django.contrib.auth import views as auth_views
from django.urls import path, reverse_lazy
from django.views.generic import TemplateView

from accounts import views

app_name = "accounts"

urlpatterns = [
    path("signup/", views.signup, name="signup"),
    path("signup/sent/", views.signup_sent, name="signup-sent"),
    path("signup/confirm/<str:token>/", views.signup_confirm, name="signup-confirm"),
    path("email/", views.email_change, name="email-change"),
    path("team/", views.team, name="team"),
    path("team/invite/", views.team_invite, name="team-invite"),
    path("team/<id:user_id>/role/", views.member_role, name="member-role"),
    path("team/<id:user_id>/remove/", views.member_remove, name="member-remove"),
    path("invitation/<str:token>/", views.invitation, name="invitation"),
    path("email/confirm/<str:token>/", views.email_confirm, name="email-confirm"),
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", views.LogoutView.as_view(), name="logout"),
    path("profile/", views.profile, name="profile"),
    # The list of keys and a key's page (its sandbox) are site pages: site_pages/urls.py.
    path("keys/new/", views.api_key_create, name="api-key-create"),
    path("keys/<id:key_id>/revoke/", views.api_key_revoke, name="api-key-revoke"),
    path("password-reset/", views.PasswordResetView.as_view(), name="password-reset"),
    path(
        "password-reset/sent/",
        TemplateView.as_view(template_name="accounts/password_reset_sent.html"),
        name="password-reset-sent",
    ),
    path(
        "password-reset/<uidb64>/<token>/",
        views.PasswordResetConfirmView.as_view(),
        name="password-reset-confirm",
    ),
    path(
        "password-reset/done/",
        TemplateView.as_view(template_name="accounts/password_reset_done.html"),
        name="password-reset-done",
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
