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


# What the bank's decline says, in the buyer's words, naming the field when one is wrong
# (Stripe's decline codes; the others, fraud-related ones included, read as a plain decline).
_DECLINED_BECAUSE = {
    "expired_card": _(
        "Your card has expired: check its expiry date, or use another card. Nothing was charged."
    ),
    "incorrect_cvc": _(
        "The card's security code (CVC) is wrong: check it, or use another card. Nothing was "
        "charged."
    ),
    "incorrect_number": _(
        "The card number is wrong: check it, or use another card. Nothing was charged."
    ),
    "incorrect_zip": _(
        "The postal code does not match the card's: check it, or use another card. Nothing "
        "was charged."
    ),
    "insufficient_funds": _(
        "Your card was declined for insufficient funds. Nothing was charged; try another card."
    ),
}
_DECLINED_BECAUSE["invalid_cvc"] = _DECLINED_BECAUSE["incorrect_cvc"]
_DECLINED_BECAUSE["invalid_number"] = _DECLINED_BECAUSE["incorrect_number"]
_DECLINED_BECAUSE["invalid_expiry_month"] = _DECLINED_BECAUSE["expired_card"]
_DECLINED_BECAUSE["invalid_expiry_year"] = _DECLINED_BECAUSE["expired_card"]


def card_declined(*codes: str) -> CardDeclined:
    """A decline whose ``detail`` says why when Stripe's code (or decline code) says which
    field or what; the error's code stays ``card_declined``."""
    for code in codes:
        if isinstance(code, str) and code in _DECLINED_BECAUSE:
            return CardDeclined(str(_DECLINED_BECAUSE[code]))
    return CardDeclined()


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
