"""Removing secrets and card data from a body before it is stored (docs/request-log.md).

What goes: the value of every JSON field (or form/query parameter) whose name says it is a
secret (password, secret, token, access, refresh, apiKey, key, cvc, cvv, pin…), and wherever they
appear, API keys (``rsl_live_…``, ``rsl_test_…``), webhook secrets (``whsec_…``), Stripe client
secrets (``pi_…_secret_…``, ``seti_…_secret_…``), JSON Web Tokens, ``Bearer`` credentials and
card numbers (13 to 19 digits, spaces or dashes allowed, passing the Luhn check). Each is
replaced by ``[redacted]``.

A complete JSON body that names a secret field is redacted field by field and written back
compactly; anything else (a truncated or invalid body, form data) field by field with
patterns; a body naming no secret field is kept as it was sent. Either way the
patterns then run over the whole text, and only then is the text cut to its stored length:
a cut never leaves the head of a secret it would have removed.
"""

from __future__ import annotations

import json
import re
from typing import Any

REDACTED = "[redacted]"

# Field names compared lowercased, without "_" and "-": "api_key", "apiKey", "x-api-key".
_SECRET_NAMES = frozenset(
    {
        "key",
        "apikey",
        "xapikey",
        "access",
        "refresh",
        "authorization",
        "cvc",
        "cvv",
        "cvc2",
        "cvv2",
        "csc",
        "otp",
        "pan",
        "cardnumber",
        # A delivered PIN (contract section 17): the whole ``pin`` object of a recharge body.
        "pin",
    }
)
_SECRET_PARTS = ("password", "passwd", "secret", "token", "apikey", "privatekey", "signature")
_QUOTED_NAMES = tuple(f'"{name}"' for name in sorted(_SECRET_NAMES))
_FORM_NAMES = tuple(f"{name}=" for name in sorted(_SECRET_NAMES))

# Secrets recognised by their form, each run only when its marker is in the text (one
# alternation of them all would be slower: Python's re then tries each at every position).
_PATTERNS = [
    ("rsl_", re.compile(r"rsl_(?:live|test)_[A-Za-z0-9]+"), REDACTED),
    ("whsec_", re.compile(r"whsec_[A-Za-z0-9_\-+/=]+"), REDACTED),
    ("_secret_", re.compile(r"(?:pi|seti)_[A-Za-z0-9]+_secret_[A-Za-z0-9]+"), REDACTED),
    (
        "eyJ",
        re.compile(r"eyJ[A-Za-z0-9_\-]+\.eyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]*"),
        REDACTED,
    ),  # JWT
]
_BEARER = re.compile(r"(?i)(bearer )[A-Za-z0-9._~+/\-]+=*")
# 13 to 19 digits, single spaces or dashes between them; not part of a longer word, number
# or a phone number in E.164 ("+52…"). Luhn decides.
_CARD_CANDIDATE = re.compile(r"(?<![A-Za-z0-9_+.])\d(?:[ \-]?\d){12,18}(?![A-Za-z0-9_])")
# "name": value in JSON text that did not parse (cut short): strings, numbers, literals.
_JSON_PAIR = re.compile(
    r'"(?P<name>[^"\\]{1,64})"(?P<sep>\s*:\s*)'
    r'(?P<value>"(?:[^"\\]|\\.)*(?:"|$)|-?[0-9][0-9.eE+\-]*|true|false|null)'
)
# A ``"pin": {…}`` object in JSON text that did not parse (cut short): up to its end or the
# text's (its code comes first, so a "}" inside its instructions leaves no code behind).
_PIN_OBJECT = re.compile(r'"pin"(?P<sep>\s*:\s*)\{[^}]*(?:\}|$)')
# name=value in a query string or a form body.
_FORM_PAIR = re.compile(r"(?P<lead>^|[&;?\s])(?P<name>[^=&;?\s]{1,64})=(?P<value>[^&;\s]*)")


def is_secret_name(name: str) -> bool:
    normal = name.lower().replace("_", "").replace("-", "")
    return normal in _SECRET_NAMES or any(part in normal for part in _SECRET_PARTS)


def luhn_valid(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if position % 2:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def _card(match: re.Match[str]) -> str:
    digits = re.sub(r"[ \-]", "", match.group(0))
    return REDACTED if luhn_valid(digits) else match.group(0)


def redact_patterns(text: str) -> str:
    """Secrets and card numbers anywhere in ``text``."""
    for marker, pattern, replacement in _PATTERNS:
        if marker in text:
            text = pattern.sub(replacement, text)
    if "bearer" in text.lower():
        text = _BEARER.sub(rf"\g<1>{REDACTED}", text)
    return _CARD_CANDIDATE.sub(_card, text)


def redact_value(value: Any) -> Any:
    """A decoded JSON value with every secret field's value replaced (recursively)."""
    if isinstance(value, dict):
        return {
            name: REDACTED if is_secret_name(str(name)) else redact_value(item)
            for name, item in value.items()
        }
    if isinstance(value, list):
        return [redact_value(item) for item in value]
    return value


def _json_pair(match: re.Match[str]) -> str:
    if not is_secret_name(match.group("name")):
        return match.group(0)
    return f'"{match.group("name")}"{match.group("sep")}"{REDACTED}"'


def _form_pair(match: re.Match[str]) -> str:
    if not is_secret_name(match.group("name")):
        return match.group(0)
    return f"{match.group('lead')}{match.group('name')}={REDACTED}"


def _may_name_a_secret(text: str) -> bool:
    """Whether any field or parameter name in ``text`` could be a secret's (a quick look, so
    that most bodies skip the field-by-field pass and are kept as they were sent)."""
    if "\\u" in text:  # an escaped name only decoding shows
        return True
    normal = text.lower().replace("_", "").replace("-", "")
    if any(part in normal for part in _SECRET_PARTS):
        return True
    if '"' in normal and any(name in normal for name in _QUOTED_NAMES):
        return True
    return "=" in normal and any(name in normal for name in _FORM_NAMES)


def redact_text(text: str) -> str:
    """A body or query string of any kind: JSON field by field when it parses, else by
    patterns of ``"name": value`` and ``name=value``; then secrets and card numbers."""
    if not _may_name_a_secret(text):
        return redact_patterns(text)
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            decoded = json.loads(stripped)
        except ValueError:
            text = _PIN_OBJECT.sub(rf'"pin"\g<sep>"{REDACTED}"', text)
            text = _JSON_PAIR.sub(_json_pair, text)
        else:
            text = json.dumps(redact_value(decoded), ensure_ascii=False, separators=(",", ":"))
    elif "=" in text:
        text = _FORM_PAIR.sub(_form_pair, text)
    return redact_patterns(text)


def redact_body(raw: bytes, *, total: int, limit: int) -> str:
    """What is stored of a body: decoded as UTF-8, redacted, then cut to ``limit`` characters
    (``raw`` is the captured head of a body of ``total`` bytes)."""
    text = raw.decode("utf-8", errors="replace")
    if len(raw) < total:
        text = text.rstrip("\ufffd")  # the captured head may end in the middle of a character
    redacted = redact_text(text)
    return redacted if len(redacted) <= limit else redacted[:limit]
