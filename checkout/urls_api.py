"""The card flow's API (web sessions only): paying an order by card, topping up the wallet by
card. Included before orders' and the wallet's routes: ``payments/<id>`` would take
``payments/prepare`` otherwise."""

from django.urls import path

from checkout import apis

urlpatterns = [
    path("payments/prepare", apis.PaymentPrepareApi.as_view(), name="payments-prepare"),
    path("payments/checkout", apis.PaymentCheckoutApi.as_view(), name="payments-checkout"),
    path("payments/cancel", apis.PaymentCancelApi.as_view(), name="payments-cancel"),
    # A guest's card checkout on the site (no account, docs/site.md).
    path(
        "guest/payments/prepare",
        apis.GuestPaymentPrepareApi.as_view(),
        name="guest-payments-prepare",
    ),
    path(
        "guest/payments/checkout",
        apis.GuestPaymentCheckoutApi.as_view(),
        name="guest-payments-checkout",
    ),
    path(
        "guest/payments/cancel",
        apis.GuestPaymentCancelApi.as_view(),
        name="guest-payments-cancel",
    ),
    # Card top-ups of the wallet: the card flow paying a wallet top-up.
    path("wallet/topups/prepare", apis.TopUpPrepareApi.as_view(), name="topups-prepare"),
    path("wallet/topups/checkout", apis.TopUpCheckoutApi.as_view(), name="topups-checkout"),
]
