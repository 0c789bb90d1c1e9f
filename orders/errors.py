from django.utils.translation import gettext_lazy as _

from reseller.errors import ApplicationError
from reseller.idempotency import (  # the mechanism's refusals, shared with the network's
    IdempotencyKeyInUse as IdempotencyKeyInUse,
)
from reseller.idempotency import IdempotencyKeyInvalid as IdempotencyKeyInvalid
from reseller.idempotency import IdempotencyKeyRequired as IdempotencyKeyRequired
from reseller.idempotency import IdempotencyKeyReused as IdempotencyKeyReused


class CurrencyMismatch(ApplicationError):
    code = "currency_mismatch"
    status = 400
    title = _("Currency mismatch")
    default_detail = _("baseCurrency must equal the wallet currency.")


class CartAlreadyPaid(ApplicationError):
    code = "cart_empty"
    status = 409
    title = _("Conflict")
    default_detail = _("The cart has no lines left to pay: it was paid meanwhile.")


class CartLineFull(ApplicationError):
    """Adding to a cart line (same product, same number) past what one line holds."""

    code = "validation_error"
    status = 400
    title = _("Validation error")
    default_detail = _("A cart line holds at most 20 recharges.")


class InvalidAmount(ApplicationError):
    """A line's ``localAmount`` its product does not take (contract section 17): a range
    product's missing, out of range or off its step; a fixed product's other than its face
    value. Request bodies report it per line (``items[i].localAmount``, reseller.errors)."""

    code = "invalid_amount"
    status = 400
    title = _("Invalid amount")
    default_detail = _("This product does not send that amount.")
