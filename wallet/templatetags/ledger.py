"""The wallet's ledger in the reader's words: an entry's memo is written once, in English, by
the code that posts it ("order ord_…", "refund of rch_…"); the page says what it means in the
reader's language. A memo written by staff (an adjustment's reason) is shown as it is."""

from __future__ import annotations

import re

from django import template
from django.utils.translation import gettext as _

register = template.Library()

_PATTERNS = [
    (re.compile(r"^order \w+$"), lambda: _("Top-ups bought")),
    (re.compile(r"^refund of \w+$"), lambda: _("Refund of a top-up that could not be delivered")),
    (re.compile(r"^retry of \w+$"), lambda: _("A refunded top-up sent again")),
    (re.compile(r"^card payment$"), lambda: _("Paid by card")),
    (re.compile(r"^(bank transfer|Bank transfer)$"), lambda: _("Bank transfer")),
    (re.compile(r"^(operator top-up|Manual \(operator\))$"), lambda: _("Added by our team")),
    (re.compile(r"^sandbox addition$"), lambda: _("Sandbox addition")),
]


@register.filter
def ledger_memo(memo: str) -> str:
    for pattern, words in _PATTERNS:
        if pattern.match(memo or ""):
            return words()
    return memo
