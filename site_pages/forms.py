"""Forms of the site pages."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts.models import Account, ApiKey
from orders.statements import (
    LIVE_RECHARGE_STATUSES,
    recharge_filter_keys,
    recharge_filter_operators,
)
from recharges.models import Recharge

SITE = "site"  # the key filter's choice for recharges bought on the site (no API key)


class RechargeFilters(forms.Form):
    """The filters of the period's recharges; choices from the catalog and the account's keys,
    so anything else (a typo, junk) is an error on the page, never a query."""

    status = forms.ChoiceField(label=gettext_lazy("Status"), required=False)
    operator = forms.ChoiceField(label=gettext_lazy("Operator"), required=False)
    country = forms.ChoiceField(label=gettext_lazy("Country"), required=False)
    key = forms.ChoiceField(label=gettext_lazy("Key"), required=False)

    def __init__(self, data: Any, *, account: Account) -> None:
        super().__init__(data)
        self.operators = {op.public_id: op for op in recharge_filter_operators()}
        self.keys = {key.public_id: key for key in recharge_filter_keys(account=account)}
        statuses = dict(Recharge.Status.choices)
        self._choose(
            "status",
            [
                ("", _("Any status")),
                *((status.value, statuses[status]) for status in LIVE_RECHARGE_STATUSES),
            ],
        )
        by_country: dict[str, list[tuple[str, str]]] = {}
        countries: dict[str, str] = {}
        for op in self.operators.values():
            name = op.country.name_localized
            countries[op.country.code] = name
            by_country.setdefault(name, []).append((op.public_id, op.name_localized))
        self._choose(
            "operator",
            [
                ("", _("Any operator")),
                *sorted(
                    (name, sorted(ops, key=lambda o: o[1])) for name, ops in by_country.items()
                ),
            ],
        )
        self._choose(
            "country",
            [("", _("Any country")), *sorted(countries.items(), key=lambda item: item[1])],
        )
        self._choose(
            "key",
            [
                ("", _("Any or none")),
                (SITE, _("On the site")),
                *((key.public_id, self._key_label(key)) for key in self.keys.values()),
            ],
        )

    def _choose(self, name: str, choices: list[Any]) -> None:
        field = self.fields[name]
        assert isinstance(field, forms.ChoiceField)
        field.choices = choices

    @staticmethod
    def _key_label(key: ApiKey) -> str:
        words = {"name": key.name, "prefix": key.prefix}
        if key.revoked_at:
            return _("%(name)s (%(prefix)s…), revoked") % words
        return f"{key.name} ({key.prefix}…)"

    def selection(self) -> dict[str, Any]:
        """The valid filters as ``period_recharges`` takes them (an invalid one is
        left out, and its error shown)."""
        data = self.cleaned_data if self.is_bound else {}
        key = data.get("key") or ""
        return {
            "status": data.get("status") or None,
            "operator": self.operators.get(data.get("operator") or ""),
            "country": data.get("country") or None,
            "api_key": self.keys.get(key),
            "site_only": key == SITE,
            "operators": {op.pk: op for op in self.operators.values()},
        }
