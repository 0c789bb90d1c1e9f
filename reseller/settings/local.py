"""The embedded default for a developer's machine: DEBUG on unless the environment says no."""

from reseller.env import env

from .base import *  # noqa: F403
from .base import refuse_insecure_production

DEBUG = env.bool("DEBUG", default=True)
refuse_insecure_production(DEBUG, SECRET_KEY)  # noqa: F405
# Static files are served from the source folders in development; no collectstatic needed.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True
# Demo bank details (the IBAN standard's documentation example) unless the environment has real
# ones: the bank-transfer page works out of the box on a developer's machine.
BANK_TRANSFER_BENEFICIARY = BANK_TRANSFER_BENEFICIARY or "Reseller Demo Ltd"  # noqa: F405
BANK_TRANSFER_IBAN = BANK_TRANSFER_IBAN or "GB82 WEST 1234 5698 7654 32"  # noqa: F405
BANK_TRANSFER_BIC = BANK_TRANSFER_BIC or "WESTGB2L"  # noqa: F405
