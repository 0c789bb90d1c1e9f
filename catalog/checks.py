"""Refuse to run production without ``FIELD_ENCRYPTION_KEY`` once a PIN product exists
(contract section 17: PINs are encrypted at rest; docs/security.md).

A database check (tag ``field_encryption``, run with ``--database``): ``migrate`` runs it, and
so do gunicorn (``gunicorn.conf.py``) and the Celery worker (``reseller.celery``) as they start.
With DEBUG on (a developer's machine) it is silent: ``make run`` makes a key anyway.
"""

from __future__ import annotations

from django.conf import settings
from django.core import checks
from django.db import DatabaseError

from reseller.crypto import SETTING, keys_configured

TAG = "field_encryption"


@checks.register(TAG, checks.Tags.database)
def field_encryption_key_check(app_configs=None, databases=None, **kwargs) -> list[checks.Error]:
    if not databases or settings.DEBUG or keys_configured():
        return []
    from catalog.models import Product, ProductType

    try:
        sells_pins = Product.objects.filter(product_type=ProductType.PIN).exists()
    except DatabaseError:  # not migrated yet: nothing sold, nothing to protect
        return []
    if not sells_pins:
        return []
    return [
        checks.Error(
            f"{SETTING} is not set, and a PIN product exists: PINs are encrypted at rest with "
            "it, so the service refuses to start without it.",
            hint=f"Set {SETTING} to a Fernet key (python -c 'from cryptography.fernet import "
            'Fernet; print(Fernet.generate_key().decode())\'); docs/security.md, "PINs".',
            id="catalog.E001",
        )
    ]
