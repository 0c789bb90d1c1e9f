"""Providers' callbacks (a site route, no session; recharges/callbacks.py)."""

from django.urls import path

from recharges import callbacks

app_name = "recharges"

urlpatterns = [
    path("webhooks/providers/<slug:name>", callbacks.provider_callback, name="provider-callback"),
]
