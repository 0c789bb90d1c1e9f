"""Opaque, prefixed public identifiers (docs/contract.md §1): ``usr_…``, ``pay_…``."""

import secrets
import string

_ALPHABET = string.ascii_letters + string.digits
_UNBIASED = 256 - 256 % len(_ALPHABET)  # 248: bytes below it map evenly onto 62 symbols


def random_base62(length: int) -> str:
    """``length`` symbols drawn uniformly from the OS's random source, from one read of its
    bytes (rejection sampling) instead of one read per symbol: every request names a few
    new rows, and per-symbol reads were a measurable part of the B2B request."""
    symbols: list[str] = []
    while len(symbols) < length:
        for byte in secrets.token_bytes(length + 8):
            if byte < _UNBIASED:
                symbols.append(_ALPHABET[byte % len(_ALPHABET)])
                if len(symbols) == length:
                    break
    return "".join(symbols)


def make_id(prefix: str) -> str:
    return f"{prefix}_{random_base62(20)}"
