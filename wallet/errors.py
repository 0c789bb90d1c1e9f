from django.utils.translation import gettext_lazy as _

from reseller.errors import ApplicationError


class InsufficientBalance(ApplicationError):
    code = "insufficient_balance"
    status = 402
    title = _("Insufficient balance")
    default_detail = _("The available balance is below the order total.")


class CardTopUpNeedsPayment(ApplicationError):
    code = "topup_not_approvable"
    status = 409
    title = _("Conflict")
    default_detail = _(
        "A card top-up is approved only by its succeeded card payment, never by hand."
    )


class TopUpNotPending(ApplicationError):
    code = "topup_not_pending"
    status = 409
    title = _("Conflict")
    default_detail = _("This top-up was already decided.")


class InvalidAmount(ApplicationError):
    code = "validation_error"
    status = 400
    title = _("Validation error")
    default_detail = _("The amount must be a positive number with at most two decimals.")


class WalletCurrencyMismatch(ApplicationError):
    code = "currency_mismatch"
    status = 400
    title = _("Currency mismatch")
    default_detail = _("The currency must be the wallet currency.")
