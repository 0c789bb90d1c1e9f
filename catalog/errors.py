"""Catalog errors. They render as problem details through reseller.errors."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from reseller.errors import ApplicationError, NotFound, ValidationFailed


class ProductNotFound(NotFound):
    default_detail = _("No such recharge product.")


class ProductUnavailable(ApplicationError):
    """A product no provider can sell at a price over its cost (docs/pricing.md)."""

    code = "product_unavailable"
    status = 409
    title = _("Product unavailable")
    default_detail = _("This recharge product is not available at the moment.")


class FxRateNotFound(ApplicationError):
    code = "unsupported_currency"
    status = 400
    title = _("Unsupported currency")
    default_detail = _("There is no exchange rate for this currency pair.")


class PhoneNumberError(ValidationFailed):
    """A recipient number refused; 400 ``validation_error`` with one field error.

    ``field_code`` is the stable code of the field error (``invalid_phone_number``,
    ``phone_country_mismatch``); ``message`` its human text. Serializers re-raise it as a
    DRF field error (see ``catalog.serializers.RecipientNumberField``) so the field path
    (``items[0].recipientNumber``) is right.
    """

    field_code = "invalid_phone_number"

    def __init__(self, message: str, *, field: str = "recipientNumber") -> None:
        self.message = str(message)
        super().__init__(
            fields=[{"field": field, "code": self.field_code, "message": self.message}]
        )


class InvalidPhoneNumber(PhoneNumberError):
    field_code = "invalid_phone_number"


class PhoneCountryMismatch(PhoneNumberError):
    field_code = "phone_country_mismatch"
