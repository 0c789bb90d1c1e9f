"""Included under ``accounts/keys/`` (reseller/urls.py): the request log of one API key."""

from django.urls import path

from requestlog import views

app_name = "requestlog"

urlpatterns = [
    path("<id:key_id>/requests/", views.api_key_requests, name="api-key-requests"),
    path("<id:key_id>/requests/<id:entry_id>/", views.api_key_request, name="api-key-request"),
]
