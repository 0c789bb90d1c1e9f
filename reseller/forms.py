"""Form fields the site's forms share."""

from __future__ import annotations

from django import forms
from django.utils import formats

from reseller.money import is_plain_decimal


class AmountField(forms.DecimalField):
    """An amount typed in a form, read as written (``reseller.money.is_plain_decimal``) after
    the language's separators (``localize``: "12,50" in Spanish): Django's DecimalField reads
    whatever Decimal() reads, "1_000" as 1000 and "١٢٣" as 123."""

    def to_python(self, value):
        if isinstance(value, str) and value.strip():
            text = value.strip()
            if self.localize:
                text = formats.sanitize_separators(text)
            if not is_plain_decimal(str(text)):
                raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        return super().to_python(value)
