"""The shipped Spanish and French catalogs are complete and compiled (a fresh install needs no
gettext tools: the .mo files are in the repository)."""

import gettext

import pytest

from tests.po_support import catalogs, parse


@pytest.mark.parametrize("language", ["es", "fr"])
def test_every_message_is_translated_and_none_is_fuzzy(language):
    found = [entry for po in catalogs(language) for entry in parse(po)[1]]
    assert len(found) > 400
    assert [e.msgid for e in found if not all(e.msgstr.values()) or not e.msgstr] == []
    assert [e.msgid for e in found if "fuzzy" in e.flags] == []


@pytest.mark.parametrize("language", ["es", "fr"])
def test_the_compiled_catalog_matches_the_source(language):
    stale = []
    for po in catalogs(language):
        with po.with_suffix(".mo").open("rb") as mo:
            compiled = gettext.GNUTranslations(mo)
        for entry in parse(po)[1]:
            if entry.msgid_plural is not None:
                continue  # tests/test_plural_forms.py renders every plural form
            if entry.msgctxt is not None:
                text = compiled.pgettext(entry.msgctxt, entry.msgid)
            else:
                text = compiled.gettext(entry.msgid)
            if text != entry.msgstr[0]:
                stale.append(entry.msgid)
    assert stale == [], "run `make messages` (compilemessages) and commit the .mo files"
