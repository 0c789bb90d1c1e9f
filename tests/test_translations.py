"""The shipped Spanish and French catalogs are complete and compiled (a fresh install needs no
gettext tools: the .mo files are in the repository)."""

import ast
import gettext
import re
from pathlib import Path

import pytest

LOCALE = Path(__file__).resolve().parent.parent / "reseller" / "locale"
STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def entries(po: Path):
    """(msgid, msgstr, fuzzy) of every singular entry of a .po file."""
    for block in po.read_text().split("\n\n"):
        if "msgid_plural" in block or "\nmsgid " not in "\n" + block:
            continue
        msgid_part = block.split("msgid ", 1)[1].split("\nmsgstr ", 1)
        if len(msgid_part) != 2:
            continue
        msgid = "".join(ast.literal_eval(s) for s in STRING.findall(msgid_part[0]))
        msgstr = "".join(ast.literal_eval(s) for s in STRING.findall(msgid_part[1]))
        if msgid:
            yield msgid, msgstr, "#, fuzzy" in block


@pytest.mark.parametrize("language", ["es", "fr"])
def test_every_message_is_translated_and_none_is_fuzzy(language):
    po = LOCALE / language / "LC_MESSAGES" / "django.po"
    found = list(entries(po))
    assert len(found) > 400
    assert [m for m, s, _f in found if not s] == []
    assert [m for m, _s, fuzzy in found if fuzzy] == []


@pytest.mark.parametrize("language", ["es", "fr"])
def test_the_compiled_catalog_matches_the_source(language):
    folder = LOCALE / language / "LC_MESSAGES"
    with (folder / "django.mo").open("rb") as mo:
        compiled = gettext.GNUTranslations(mo)
    stale = [m for m, s, _f in entries(folder / "django.po") if compiled.gettext(m) != s]
    assert stale == [], "run `make messages` (compilemessages) and commit the .mo files"
