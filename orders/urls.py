"""Site pages of carts, checkout, receipts, payment history and batches, and the price of a
range product's amount that its page asks for."""

from django.urls import path

from orders import batch_views, views

app_name = "orders"

urlpatterns = [
    path("cart/", views.cart, name="cart"),
    path("cart/add/", views.cart_add, name="cart-add"),
    path("cart/items/<id:item_id>/", views.cart_item_update, name="cart-item-update"),
    path("cart/items/<id:item_id>/remove/", views.cart_item_remove, name="cart-item-remove"),
    # What the product page asks as the buyer types a range product's amount.
    path("products/<id:product_id>/price", views.product_price, name="product-price"),
    path("checkout/", views.checkout, name="checkout"),
    path("checkout/wallet/", views.checkout_wallet, name="checkout-wallet"),
    path("checkout/resume/", views.checkout_resume, name="checkout-resume"),
    path("checkout/guest/", views.guest_checkout, name="guest-checkout"),
    path("receipts/<str:token>/", views.guest_receipt, name="guest-receipt"),
    path(
        "receipts/<str:token>/status.json", views.guest_receipt_status, name="guest-receipt-status"
    ),
    path("payments/", views.history, name="history"),
    path("payments/<id:payment_id>/", views.receipt, name="receipt"),
    path("payments/<id:payment_id>/status.json", views.receipt_status, name="receipt-status"),
    path("batches/", batch_views.batches, name="batches"),
    path("batches/upload/", batch_views.batch_upload, name="batch-upload"),
    path("batches/confirm/", batch_views.batch_confirm, name="batch-confirm"),
    path("batches/<id:batch_id>/", batch_views.batch, name="batch"),
    path("batches/<id:batch_id>/status.json", batch_views.batch_status, name="batch-status"),
    path("batches/<id:batch_id>/results.csv", batch_views.batch_results, name="batch-results"),
]
