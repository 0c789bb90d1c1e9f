"""Forms of the wallet pages."""

from __future__ import annotations

from decimal import Decimal

from django import forms
from django.utils.translation import gettext_lazy as _

from reseller.forms import AmountField


class ThresholdForm(forms.Form):
    threshold = AmountField(
        label=_("Low-balance threshold"),
        required=False,
        min_value=Decimal("0"),
        max_digits=12,
        decimal_places=2,
        localize=True,  # 100,00 shown and read in Spanish and French (100.00 is read too)
        widget=forms.TextInput(attrs={"inputmode": "decimal", "autocomplete": "off"}),
        help_text=_(
            "A payment that takes the live wallet below this amount sends wallet.balance_low. "
            "Empty: no alert."
        ),
    )
