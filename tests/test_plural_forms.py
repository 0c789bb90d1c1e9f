"""Every plural message of every catalog says the right thing for one and for several (issue 43,
item 11: "como máximo 10 pago con tarjeta").

Each entry with a ``msgid_plural`` is rendered as the site renders it (Django's ``ngettext``
with the compiled catalog, then its placeholders filled) with 1 and with 5, in each language
we ship. In Spanish and French the counted noun comes right after the number and takes the
plural's -s (French also -x): "5 pagos", "5 paiements", "5 fois". So the word after "5" must be
a plural, and differ from the word after "1" unless the word is the same in both numbers
(``INVARIABLE``); an adjective before the number agrees too ("los últimos 5 días", "el último 1
día"), so the word before "1" is no plural. A message without a number must still differ
between its two forms when the English ones do. ``msgfmt --check`` checks the catalogs'
syntax, placeholders and headers.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from django.utils import translation

from tests.po_support import ROOT, Entry, catalogs, language_of, parse

# The plural rule of each language we ship (gettext's Plural-Forms header).
PLURAL_RULES = {"es": "nplurals=2; plural=(n != 1);", "fr": "nplurals=2; plural=(n > 1);"}
PLURAL_ENDINGS = {"es": ("s",), "fr": ("s", "x")}
# Words that are the same for 1 and for several (and units, which never take a plural).
INVARIABLE = {"es": {"más", "min", "h"}, "fr": {"fois", "mois", "prix", "min", "h"}}
# Words ending like a plural that may stand before any number ("au plus 1 fois").
BEFORE_A_NUMBER = {
    "es": {"más", "menos", "tras", "apenas"},
    "fr": {"plus", "moins", "dans", "sous", "sans", "après", "depuis", "dès", "vers", "très"},
}
# checkout/limits.py's card-limit messages are rewritten by the card-limit branch of issue 43
# (item 11), not here. Strict: once that branch is merged these pass, and the entries must
# leave this list, so the test covers them from then on.
PLACEHOLDER = re.compile(r"%(?:\((\w+)\))?[-#0 +]*\d*(?:\.\d+)?([sdif])")
WORD = re.compile(r"[^\W\d_]+")


def plural_entries():
    for po in catalogs():
        language = language_of(po)
        for entry in parse(po)[1]:
            if entry.msgid_plural is not None:
                yield pytest.param(language, entry, id=f"{language}:{entry.where}")


def count_name(entry: Entry) -> str | None:
    """The placeholder that receives the number: the last one before the first word that
    differs between the English singular and plural ("%(name)s: %(n)s row checked" → ``n``),
    else the only one there is. ``None`` when the message names no number."""
    names = [m.group(1) or "" for m in PLACEHOLDER.finditer(entry.msgid)]
    if not names:
        return None
    singular, plural = entry.msgid.split(), (entry.msgid_plural or "").split()
    last = None
    for one, many in zip(singular, plural, strict=False):
        if one != many:
            return last if last is not None else (names[0] if len(names) == 1 else None)
        if found := PLACEHOLDER.search(one):
            last = found.group(1) or ""
    return names[0] if len(set(names)) == 1 else last


def render(language: str, entry: Entry, n: int) -> str:
    """What the site shows for ``n``: the catalog's form for it, its placeholders filled (the
    number, and "X" or 7 for the others)."""
    with translation.override(language):
        if entry.msgctxt is not None:
            text = translation.npgettext(entry.msgctxt, entry.msgid, entry.msgid_plural, n)
        else:
            text = translation.ngettext(entry.msgid, entry.msgid_plural, n)
    return fill(text, count_name(entry), n) if "python-format" in entry.flags else text


def fill(text: str, count: str | None, n: int) -> str:
    if count == "":  # a bare %d
        return text % n
    values = {}
    for match in PLACEHOLDER.finditer(text):
        name, kind = match.group(1), match.group(2)
        values[name] = n if name == count else ("X" if kind == "s" else 7)
    return text % values


def expected(entry: Entry, form: int, n: int) -> str:
    text = entry.msgstr[form]
    return fill(text, count_name(entry), n) if "python-format" in entry.flags else text


def word_after(number: int, text: str) -> str | None:
    found = re.search(rf"(?<![\w.,]){number}\s+(\S+)", text)
    word = WORD.match(found.group(1)) if found else None
    return word.group(0) if word and word.group(0).islower() else None


def word_before(number: int, text: str) -> str | None:
    found = re.search(rf"(\S+)\s+{number}(?![\w.,])", text)
    word = WORD.fullmatch(found.group(1)) if found else None
    return word.group(0).lower() if word else None


@pytest.mark.parametrize("po", catalogs(), ids=lambda po: str(po.relative_to(ROOT)))
def test_every_catalog_has_its_languages_plural_rule(po):
    header, _entries = parse(po)
    language = language_of(po)
    assert language in PLURAL_RULES, f"add {language}'s plural rule and endings to this test"
    assert header["Plural-Forms"] == PLURAL_RULES[language]


@pytest.mark.parametrize(("language", "entry"), list(plural_entries()))
def test_every_plural_message_says_one_for_1_and_several_for_5(language, entry):
    one, five = render(language, entry, 1), render(language, entry, 5)
    count = count_name(entry)
    # The catalog's own forms come out: the compiled catalog is current and the header's rule
    # picks the first form for 1 and the second for 5.
    assert (one, five) == (expected(entry, 0, 1), expected(entry, 1, 5)), "run compilemessages"
    if count is None:
        if entry.msgid != entry.msgid_plural:
            assert one != five, f"the same words for one and several: {five!r}"
        return
    assert re.search(r"(?<!\d)5(?!\d)", five), five
    before_one = word_before(1, one)
    assert (
        before_one is None
        or before_one in BEFORE_A_NUMBER[language]
        or not before_one.endswith(PLURAL_ENDINGS[language])
    ), f"a plural before 1: {one!r}"
    noun_of_one, noun_of_five = word_after(1, one), word_after(5, five)
    if noun_of_five is None:
        return  # the number ends the sentence or is followed by a name, not a noun
    invariable = noun_of_five in INVARIABLE[language]
    assert invariable or noun_of_five.endswith(PLURAL_ENDINGS[language]), (
        f"a singular after 5: {five!r}"
    )
    assert invariable or noun_of_one != noun_of_five, f"a plural after 1: {one!r}"


@pytest.mark.parametrize("po", catalogs(), ids=lambda po: str(po.relative_to(ROOT)))
def test_no_message_counts_with_an_s_in_brackets(po):
    """A message with a number is a plural entry, never "3 recarga(s) marcada(s) como
    fallida(s)" (``ngettext_lazy(one, many, "count")`` for the back office's action messages)."""
    bracketed = [
        entry.msgid
        for entry in parse(po)[1]
        if re.search(r"\w\((s|es)\)", entry.msgid) and PLACEHOLDER.search(entry.msgid)
    ]
    assert bracketed == []


@pytest.mark.skipif(shutil.which("msgfmt") is None, reason="gettext's msgfmt is not installed")
@pytest.mark.parametrize("po", catalogs(), ids=lambda po: str(po.relative_to(ROOT)))
def test_msgfmt_checks_every_catalog_without_a_warning(po):
    """Syntax, every form's placeholders against the English, the plural header, and a
    header with nothing left at gettext's template values."""
    done = subprocess.run(
        ["msgfmt", "--check", "--output-file=/dev/null", str(po)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
