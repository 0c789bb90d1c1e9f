"""The ``Reseller-Signature`` header (docs/contract.md §11, docs/webhooks.md).

    Reseller-Signature: t=1764000000,v1=5257a869…[,v1=…]

``v1`` is the hex HMAC-SHA256, keyed with the endpoint's whole ``whsec_…`` secret, of
``"<t>.<raw body>"``; there is one ``v1`` per valid secret (two during the 24 h after a
rotation). A receiver recomputes it over the raw bytes it got and checks the time.

Receivers in Python can use ``verify_signature`` as it is; it has no dependency but the
standard library, so it can be copied into their code.
"""

from __future__ import annotations

import hashlib
import hmac
import time

HEADER = "Reseller-Signature"
DEFAULT_TOLERANCE = 300


class SignatureVerificationError(Exception):
    """The header is missing, malformed, stale, or no signature in it matches."""


def _as_bytes(value: bytes | str) -> bytes:
    return value.encode("utf-8") if isinstance(value, str) else value


def compute_signature(payload: bytes | str, secret: str, timestamp: int) -> str:
    message = str(timestamp).encode("ascii") + b"." + _as_bytes(payload)
    return hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()


def signature_header(payload: bytes | str, secrets: list[str], timestamp: int) -> str:
    parts = [f"t={timestamp}"]
    parts += [f"v1={compute_signature(payload, secret, timestamp)}" for secret in secrets]
    return ",".join(parts)


def verify_signature(
    payload: bytes | str,
    header: str | None,
    secret: str,
    tolerance: int = DEFAULT_TOLERANCE,
    *,
    now: float | None = None,
) -> int:
    """Check a delivery: returns its timestamp, or raises SignatureVerificationError.

    ``payload`` is the raw request body, exactly as received (not re-serialised JSON);
    ``tolerance`` is how many seconds old (or early) a timestamp may be; 0 turns the check off.
    """
    if not header:
        raise SignatureVerificationError("No Reseller-Signature header.")
    timestamp: int | None = None
    candidates: list[str] = []
    for item in header.split(","):
        key, _, value = item.strip().partition("=")
        if key == "t":
            try:
                timestamp = int(value)
            except ValueError:
                raise SignatureVerificationError("The timestamp is not a number.") from None
        elif key == "v1":
            candidates.append(value)
    if timestamp is None or not candidates:
        raise SignatureVerificationError("The header has no t= or no v1= signature.")
    expected = compute_signature(payload, secret, timestamp)
    if not any(hmac.compare_digest(expected, candidate) for candidate in candidates):
        raise SignatureVerificationError("No signature matches the payload and secret.")
    current = time.time() if now is None else now
    if tolerance and abs(current - timestamp) > tolerance:
        raise SignatureVerificationError("The timestamp is outside the tolerance (replay?).")
    return timestamp
