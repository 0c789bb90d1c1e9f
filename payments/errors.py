"""The errors of card payments that the Stripe gateway raises."""

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
