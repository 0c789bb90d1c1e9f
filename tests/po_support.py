"""The project's gettext catalogs read as entries, for the translation tests.

Every ``<app>/locale/<language>/LC_MESSAGES/*.po`` of the repository is found (today only
``reseller/locale``; an app that ships its own catalog is checked the same way without a
change here).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Folders that hold no catalog of ours (the virtualenv holds Django's and other packages').
NOT_OURS = {"node_modules", "staticfiles", "test-artifacts", "var", "build"}
STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
KEYWORD = re.compile(r"^(msgctxt|msgid_plural|msgid|msgstr(?:\[(\d+)\])?) ")


@dataclass
class Entry:
    msgid: str = ""
    msgid_plural: str | None = None
    msgctxt: str | None = None
    msgstr: dict[int, str] = field(default_factory=dict)
    flags: set[str] = field(default_factory=set)
    references: list[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        return self.references[0] if self.references else "?"


def catalogs(language: str | None = None) -> list[Path]:
    """Every .po file of the project (of one language when given)."""
    found = []
    for top in sorted(ROOT.iterdir()):
        if not top.is_dir() or top.name.startswith(".") or top.name in NOT_OURS:
            continue
        for po in sorted(top.rglob("locale/*/LC_MESSAGES/*.po")):
            if language is None or po.parent.parent.name == language:
                found.append(po)
    return found


def language_of(po: Path) -> str:
    return po.parent.parent.name


def parse(po: Path) -> tuple[dict[str, str], list[Entry]]:
    """The header's fields and every live entry (obsolete ``#~`` ones are left out)."""
    entries: list[Entry] = []
    for block in po.read_text(encoding="utf-8").split("\n\n"):
        if any(line.startswith("#~") for line in block.splitlines()):
            continue
        entry, key = Entry(), None
        for line in block.splitlines():
            if line.startswith("#,"):
                entry.flags.update(flag.strip() for flag in line[2:].split(","))
            elif line.startswith("#:"):
                entry.references.extend(line[2:].split())
            elif line.startswith("#") or not line.strip():
                continue
            elif match := KEYWORD.match(line):
                key = match.group(2) if match.group(2) is not None else match.group(1)
                _append(entry, key, line[match.end() :])
            elif line.startswith('"') and key is not None:
                _append(entry, key, line)
        if entry.msgid or entry.msgstr:
            entries.append(entry)
    header_entry = next((e for e in entries if not e.msgid and e.msgctxt is None), None)
    header = {}
    if header_entry is not None:
        entries.remove(header_entry)
        for line in header_entry.msgstr.get(0, "").splitlines():
            name, _sep, value = line.partition(":")
            header[name.strip()] = value.strip()
    return header, entries


def _append(entry: Entry, key: str, text: str) -> None:
    value = "".join(ast.literal_eval(s) for s in STRING.findall(text))
    if key == "msgid":
        entry.msgid += value
    elif key == "msgid_plural":
        entry.msgid_plural = (entry.msgid_plural or "") + value
    elif key == "msgctxt":
        entry.msgctxt = (entry.msgctxt or "") + value
    elif key == "msgstr":
        entry.msgstr[0] = entry.msgstr.get(0, "") + value
    else:  # msgstr[n]
        entry.msgstr[int(key)] = entry.msgstr.get(int(key), "") + value
