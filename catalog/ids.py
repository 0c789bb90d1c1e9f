"""Deterministic public ids: the same natural key gives the same id on every machine.

Products, operators and promotions get ``prd_…``, ``opr_…``, ``prm_…`` ids derived from their
natural key (the provider's SKU, country + slug, promotion code), so ``seed_demo`` and
``import_catalog`` are repeatable and a demo id in the docs works on every installation.
Callers must treat the ids as opaque strings.
"""

from __future__ import annotations

import hashlib
import string

_ALPHABET = string.digits + string.ascii_letters
ID_LENGTH = 20


def stable_id(prefix: str, natural_key: str) -> str:
    number = int.from_bytes(hashlib.sha256(f"{prefix}:{natural_key}".encode()).digest(), "big")
    chars = []  # type: ignore[var-annotated]
    while len(chars) < ID_LENGTH:
        number, rest = divmod(number, 62)
        chars.append(_ALPHABET[rest])
    return f"{prefix}_{''.join(chars)}"


def product_public_id(sku: str) -> str:
    return stable_id("prd", sku)


def operator_public_id(country_code: str, slug: str) -> str:
    return stable_id("opr", f"{country_code.upper()}:{slug}")


def promotion_public_id(code: str) -> str:
    return stable_id("prm", code)
