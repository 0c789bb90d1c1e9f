"""Errors of the card checkout and card top-ups (docs/contract.md section 4, docs/payments.md)."""

from django.utils.translation import gettext_lazy as _

from reseller.errors import ApplicationError, ServiceUnavailable


class CardDeclined(ApplicationError):
    code = "card_declined"
    status = 402
    title = _("Card declined")
    default_detail = _(
        "Your card was declined. Nothing was charged; try another card. Your cart is kept."
    )


class CardAuthenticationFailed(ApplicationError):
    code = "card_authentication_failed"
    status = 402
    title = _("Card authentication failed")
    default_detail = _(
        "The 3-D Secure authentication of your card failed. Nothing was charged; "
        "try again or use another card."
    )


class QuoteExpired(ApplicationError):
    code = "quote_expired"
    status = 409
    title = _("Quote expired")
    default_detail = _(
        "This price quote has expired. Nothing was charged; prepare the payment again "
        "to get a fresh quote."
    )


class PaymentMethodRequired(ApplicationError):
    code = "payment_method_required"
    status = 400
    title = _("Card details missing")
    default_detail = _(
        "The card has not been confirmed yet: confirm the SetupIntent (confirmCardSetup) "
        "before calling checkout."
    )


class PaymentNotPayable(ApplicationError):
    code = "payment_not_payable"
    status = 409
    title = _("Payment cannot be paid")
    default_detail = _("This payment is already settled and cannot be paid again.")


class CartEmpty(ApplicationError):
    code = "cart_empty"
    status = 400
    title = _("Cart empty")
    default_detail = _("The cart is empty: add a recharge first.")


class CardPaymentsUnavailable(ServiceUnavailable):
    default_detail = _("Card payments are unavailable right now. Nothing was charged; retry later.")


class WebhookSignatureInvalid(ApplicationError):
    code = "invalid_signature"
    status = 400
    title = _("Invalid signature")
    default_detail = _("The Stripe-Signature header does not match the payload.")


class WebhookEventMalformed(ApplicationError):
    code = "validation_error"
    status = 400
    title = _("Validation error")
    default_detail = _("The event does not have the shape of a Stripe event.")
