"""Site pages of carts, checkout, receipts and payment history, and the Stripe webhook."""

from django.urls import path

from orders import views
from orders.card import apis as card_apis

app_name = "orders"

urlpatterns = [
    path("cart/", views.cart, name="cart"),
    path("cart/add/", views.cart_add, name="cart-add"),
    path("cart/items/<id:item_id>/", views.cart_item_update, name="cart-item-update"),
    path("cart/items/<id:item_id>/remove/", views.cart_item_remove, name="cart-item-remove"),
    path("checkout/", views.checkout, name="checkout"),
    path("checkout/wallet/", views.checkout_wallet, name="checkout-wallet"),
    path("payments/", views.history, name="history"),
    path("payments/<id:payment_id>/", views.receipt, name="receipt"),
    path("payments/<id:payment_id>/status.json", views.receipt_status, name="receipt-status"),
    path("webhooks/stripe", card_apis.StripeWebhookView.as_view(), name="stripe-webhook"),
]
