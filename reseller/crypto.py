"""Fields encrypted at rest (contract section 17: PINs): Fernet tokens under
``FIELD_ENCRYPTION_KEY``, a list of keys of which the first encrypts and every one decrypts,
so keys rotate (``python manage.py rotate_field_encryption`` re-encrypts with the first).

The cipher is ``cryptography``'s Fernet (AES-128-CBC and HMAC-SHA256, a timestamp and a random
IV per token) through ``MultiFernet``; nothing here is home-made beyond choosing the keys.
A token is text (URL-safe base64), stored in a ``TextField``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

SETTING = "FIELD_ENCRYPTION_KEY"

__all__ = [
    "SETTING",
    "InvalidToken",
    "decrypt",
    "decrypt_json",
    "encrypt",
    "encrypt_json",
    "generate_key",
    "keys_configured",
    "rotate",
]


def generate_key() -> str:
    """A new key, as ``FIELD_ENCRYPTION_KEY`` takes it (32 random bytes, URL-safe base64)."""
    return Fernet.generate_key().decode("ascii")


def _keys() -> tuple[str, ...]:
    configured = getattr(settings, SETTING, None) or ()
    if isinstance(configured, str):
        configured = configured.split(",")
    return tuple(key.strip() for key in configured if key and key.strip())


def keys_configured() -> bool:
    return bool(_keys())


@lru_cache(maxsize=8)
def _cipher(keys: tuple[str, ...]) -> MultiFernet:
    try:
        return MultiFernet([Fernet(key.encode("ascii")) for key in keys])
    except (ValueError, UnicodeEncodeError) as exc:
        raise ImproperlyConfigured(
            f"{SETTING} must be a comma-separated list of Fernet keys (32 bytes, URL-safe "
            "base64 each: python -c 'from cryptography.fernet import Fernet; "
            "print(Fernet.generate_key().decode())')."
        ) from exc


def cipher(keys: Sequence[str] | None = None) -> MultiFernet:
    """The MultiFernet of ``keys`` (default: the setting's). Without a key it refuses, naming
    the setting: nothing secret is ever written in clear for want of one."""
    chosen = tuple(keys) if keys is not None else _keys()
    if not chosen:
        raise ImproperlyConfigured(
            f"{SETTING} is not set: PINs are encrypted at rest with it (docs/security.md)."
        )
    return _cipher(chosen)


def encrypt(text: str) -> str:
    """A token of ``text`` under the first key."""
    return cipher().encrypt(text.encode("utf-8")).decode("ascii")


def decrypt(token: str) -> str:
    """The text of a token made under any configured key (``InvalidToken`` otherwise)."""
    return cipher().decrypt(token.encode("ascii")).decode("utf-8")


def rotate(token: str) -> str:
    """The same text under the first key (``MultiFernet.rotate``)."""
    return cipher().rotate(token.encode("ascii")).decode("ascii")


def encrypt_json(value: Any) -> str:
    return encrypt(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


def decrypt_json(token: str) -> Any:
    return json.loads(decrypt(token))
