"""Site pages of carts, checkout, receipts and payment history, and the Stripe webhook."""

from django.urls import path

from orders import card_apis

urlpatterns = [
    path("webhooks/stripe", card_apis.StripeWebhookView.as_view(), name="stripe-webhook"),
]
