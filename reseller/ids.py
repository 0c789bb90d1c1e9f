"""Opaque, prefixed public identifiers (docs/contract.md section 1): ``usr_…``, ``pay_…``."""

import secrets
import string

_ALPHABET = string.ascii_letters + string.digits


def random_base62(length: int) -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(length))


def make_id(prefix: str) -> str:
    return f"{prefix}_{random_base62(20)}"
