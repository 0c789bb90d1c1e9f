"""The Stripe webhook (a site route: /webhooks/stripe, signed by Stripe, no session)."""

from django.urls import path

from checkout import apis

app_name = "checkout"

urlpatterns = [
    path("webhooks/stripe", apis.StripeWebhookView.as_view(), name="stripe-webhook"),
]
