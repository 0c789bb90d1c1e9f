"""Errors of the card checkout and card top-ups (docs/contract.md §4, docs/payments.md)."""

from django.utils.translation import gettext_lazy as _

from reseller.errors import ApplicationError, RateLimited


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


class PaymentNotCancellable(ApplicationError):
    code = "payment_not_cancellable"
    status = 409
    title = _("Payment cannot be cancelled")
    default_detail = _(
        "This payment is paid, so it can no longer be cancelled. A recharge that fails is "
        "refunded to the card."
    )


class CartEmpty(ApplicationError):
    code = "cart_empty"
    status = 400
    title = _("Cart empty")
    default_detail = _("The cart is empty: add a recharge first.")


class CardLimitReached(RateLimited):
    """A card purchase limit (docs/fraud.md) is reached: nothing is charged; ``Retry-After``
    says when the oldest payment counted against it leaves the 24-hour window."""

    code = "card_limit_reached"
    title = _("Card purchase limit reached")
    default_detail = _("A card purchase limit is reached. Nothing was charged; try again later.")


class CardPurchasesFrozen(ApplicationError):
    """A dispute or an early fraud warning froze the account's card purchases until staff
    review it (docs/fraud.md)."""

    code = "card_purchases_frozen"
    status = 403
    title = _("Card purchases frozen")
    default_detail = _(
        "Card purchases of this account are frozen after a dispute or a fraud warning on one "
        "of its card payments. Nothing was charged; contact support to have them reviewed."
    )
