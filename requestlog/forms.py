"""The search of a key's request log: a request id (exact) and a status (200, 4xx…)."""

from __future__ import annotations

import re

from django import forms
from django.utils.translation import gettext_lazy as _

_STATUS = re.compile(r"^([1-5])([0-9]{2}|xx)$")


class RequestSearchForm(forms.Form):
    request_id = forms.CharField(label=_("Request id"), required=False, max_length=128)
    status = forms.CharField(
        label=_("Status"),
        required=False,
        max_length=3,
        help_text=_("A status such as 200 or 404, or a class: 2xx, 4xx, 5xx."),
    )

    def clean_request_id(self) -> str:
        return self.cleaned_data["request_id"].strip()

    def clean_status(self) -> tuple[int, int] | None:
        value = self.cleaned_data["status"].strip().lower()
        if not value:
            return None
        match = _STATUS.match(value)
        if match is None:
            raise forms.ValidationError(
                _("Enter a status such as 200 or 404, or a class: 2xx, 4xx, 5xx.")
            )
        if match.group(2) == "xx":
            first = int(match.group(1)) * 100
            return first, first + 99
        return int(value), int(value)
