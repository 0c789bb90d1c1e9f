from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from catalog.errors import PhoneNumberError
from catalog.phone import phone_parse


class RecipientForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=80)
    phone_number = forms.CharField(label=_("Phone number"), max_length=32)
    operator = forms.CharField(required=False, widget=forms.HiddenInput)  # "MX/telcel"

    def clean_name(self) -> str:
        name = " ".join(self.cleaned_data["name"].split())
        if not name:
            raise forms.ValidationError(_("Give the recipient a name."))
        return name

    def clean_phone_number(self) -> str:
        try:
            return phone_parse(self.cleaned_data["phone_number"], field="phone_number").e164
        except PhoneNumberError as exc:
            raise forms.ValidationError(exc.message) from exc
