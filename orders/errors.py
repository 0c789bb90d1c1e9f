from django.utils.translation import gettext_lazy as _

from reseller.errors import ApplicationError


class IdempotencyKeyRequired(ApplicationError):
    code = "idempotency_key_required"
    status = 400
    title = _("Idempotency-Key required")
    default_detail = _("Send an Idempotency-Key header (1 to 255 characters), unique per order.")


class IdempotencyKeyInvalid(ApplicationError):
    code = "validation_error"
    status = 400
    title = _("Validation error")
    default_detail = _("The Idempotency-Key header must be 1 to 255 printable characters.")


class IdempotencyKeyInUse(ApplicationError):
    code = "idempotency_key_in_use"
    status = 409
    title = _("Conflict")
    default_detail = _(
        "A request with this Idempotency-Key is still being processed. Retry in a moment."
    )


class IdempotencyKeyReused(ApplicationError):
    code = "idempotency_key_reused"
    status = 422
    title = _("Unprocessable request")
    default_detail = _(
        "This Idempotency-Key was already used with a different request body. "
        "Use a new key for a new order."
    )


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
