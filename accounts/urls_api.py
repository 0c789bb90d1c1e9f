from django.urls import path

from accounts import apis

urlpatterns = [
    path("auth/login", apis.LoginApi.as_view(), name="auth-login"),
    path("auth/refresh", apis.RefreshApi.as_view(), name="auth-refresh"),
    path("auth/me", apis.MeApi.as_view(), name="auth-me"),
]
