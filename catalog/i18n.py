"""Translated catalog texts: English in the model's own column, other languages in JSON.

Each translatable model has a ``translations`` JSONField shaped
``{"es": {"name": "…"}, "fr": {"name": "…", "terms": "…"}}``. ``Localized("name")`` is a
descriptor returning the text in the active language (``get_language()``, which
LocaleMiddleware sets from Accept-Language), falling back to the English column.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils.translation import get_language


def default_language() -> str:
    return settings.LANGUAGE_CODE.split("-")[0]


def translation_languages() -> list[str]:
    """The languages stored in ``translations`` (every site language but the default)."""
    return [code for code, _name in settings.LANGUAGES if code != default_language()]


def current_language() -> str:
    return (get_language() or settings.LANGUAGE_CODE).split("-")[0].lower()


def translate(obj: Any, field: str, language: str | None = None) -> str:
    language = language or current_language()
    if language != default_language():
        value = ((obj.translations or {}).get(language) or {}).get(field)
        if value:
            return value
    return getattr(obj, field)


class Localized:
    """``name_localized = Localized("name")``: the field in the active language."""

    def __init__(self, field: str) -> None:
        self.field = field

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        return translate(obj, self.field)


def clean_translations(value: Any, *, fields: tuple[str, ...]) -> dict[str, dict[str, str]]:
    """Normalise a translations mapping: known languages and fields, stripped, empty removed."""
    if value in (None, ""):
        return {}
    if not isinstance(value, dict):
        raise ValidationError("Translations must be an object keyed by language.")
    languages = translation_languages()
    out: dict[str, dict[str, str]] = {}
    for language, texts in value.items():
        if language not in languages:
            raise ValidationError(f"Unknown translation language {language!r}.")
        if not isinstance(texts, dict):
            raise ValidationError(f"Translations for {language!r} must be an object.")
        cleaned = {}
        for field, text in texts.items():
            if field not in fields:
                raise ValidationError(f"Field {field!r} cannot be translated.")
            if not isinstance(text, str):
                raise ValidationError(f"The {language!r} {field!r} must be a string.")
            if text.strip():
                cleaned[field] = text.strip()
        if cleaned:
            out[language] = dict(sorted(cleaned.items()))
    return dict(sorted(out.items()))
