"""The embedded default for a developer's machine: DEBUG on unless the environment says no."""

from reseller.env import env

from .base import *  # noqa: F403
from .base import FIELD_ENCRYPTION_KEY, refuse_insecure_production

DEBUG = env.bool("DEBUG", default=True)
# The development key make run keeps in var/ (scripts/run.sh), for manage.py run by hand too.
_DEV_FIELD_KEY = BASE_DIR / "var" / "field-encryption-key"  # noqa: F405
if not FIELD_ENCRYPTION_KEY and _DEV_FIELD_KEY.is_file():
    FIELD_ENCRYPTION_KEY = [_DEV_FIELD_KEY.read_text().strip()]
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
