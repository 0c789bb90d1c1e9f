"""The API key format (docs/contract.md §3), pure functions with no database access.

A key reads ``rsl_<mode>_<32 random base62 characters><6 checksum characters>``, for example
``rsl_test_4fT9…Q2xk0b``. The checksum is the CRC32 of everything before it, written in six
base62 digits, so a mistyped or made-up key is refused before any database query and secret
scanners can recognise our keys. The database keeps only the SHA-256 of the whole key and its
visible prefix (``rsl_test_`` plus the first 8 random characters), used to display and find it.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
import string
import zlib
from collections.abc import Iterable
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _

from reseller.ids import random_base62
from reseller.net import normalise_ip

MODES = ("live", "test")
RANDOM_LENGTH = 32
CHECKSUM_LENGTH = 6
VISIBLE_LENGTH = 8  # random characters kept in the visible prefix
MAX_KEY_LENGTH = 128
MAX_WHITELIST_ENTRIES = 100

_BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
# Keys issued today carry 32 random characters; longer ones stay valid if we ever issue them.
_FORMAT = re.compile(rf"rsl_(live|test)_[0-9A-Za-z]{{{RANDOM_LENGTH + CHECKSUM_LENGTH},}}")


@dataclass(frozen=True)
class ParsedKey:
    mode: str
    prefix: str


def checksum(text: str) -> str:
    """CRC32 of ``text`` as six base62 digits (62**6 > 2**32, so nothing is lost)."""
    value = zlib.crc32(text.encode("ascii"))
    digits = []
    for _position in range(CHECKSUM_LENGTH):
        value, remainder = divmod(value, 62)
        digits.append(_BASE62[remainder])
    return "".join(reversed(digits))


def generate(mode: str) -> str:
    """A new plaintext key of ``mode`` ("live" or "test")."""
    if mode not in MODES:
        raise ValueError(f"unknown key mode {mode!r}")
    body = f"rsl_{mode}_{random_base62(RANDOM_LENGTH)}"
    return body + checksum(body)


def parse(plaintext: str) -> ParsedKey | None:
    """The mode and visible prefix of a well-formed key with a valid checksum, else None."""
    if len(plaintext) > MAX_KEY_LENGTH:
        return None
    match = _FORMAT.fullmatch(plaintext)
    if match is None:
        return None
    body, check = plaintext[:-CHECKSUM_LENGTH], plaintext[-CHECKSUM_LENGTH:]
    if not hmac.compare_digest(checksum(body), check):
        return None
    mode = match[1]
    return ParsedKey(mode=mode, prefix=plaintext[: len(f"rsl_{mode}_") + VISIBLE_LENGTH])


def digest(plaintext: str) -> str:
    """What the database stores: SHA-256 in hex. Keys are random, so no slow hash is needed."""
    return hashlib.sha256(plaintext.encode("utf-8")).hexdigest()


def same_digest(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode("ascii"), b.encode("ascii"))


def normalise_whitelist(entries: Iterable[str]) -> list[str]:
    """Exact IPv4/IPv6 addresses in canonical form, duplicates dropped, order kept.

    Raises Django's ValidationError naming every entry that is not a single address
    (networks such as ``10.0.0.0/24`` and host names are refused: the whitelist is exact).
    """
    result: list[str] = []
    bad: list[str] = []
    for raw in entries:
        entry = raw.strip()
        if not entry:
            continue
        address = normalise_ip(entry) if _is_plain_address(entry) else None
        if address is None:
            bad.append(entry)
        elif address not in result:
            result.append(address)
    if bad:
        raise ValidationError(
            _("Not an exact IPv4 or IPv6 address: %(entries)s") % {"entries": ", ".join(bad)},
            code="invalid_ip_address",
        )
    if len(result) > MAX_WHITELIST_ENTRIES:
        raise ValidationError(
            _("At most %(count)d addresses per key.") % {"count": MAX_WHITELIST_ENTRIES},
            code="too_many_addresses",
        )
    return result


def _is_plain_address(entry: str) -> bool:
    """One address as written by a person: no network, port, brackets or IPv6 scope."""
    try:
        ipaddress.ip_address(entry)
    except ValueError:
        return False
    return "%" not in entry


def split_whitelist(text: str) -> list[str]:
    """Entries typed one per line, or separated by commas or spaces."""
    return [part for part in re.split(r"[\s,;]+", text) if part]
