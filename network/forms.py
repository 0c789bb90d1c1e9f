"""The Network page's form: a new agent."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from accounts.models import Account
from network.models import PriceList


class AgentForm(forms.Form):
    name = forms.CharField(label=_("Agent's name"), max_length=200)
    owner_email = forms.EmailField(
        label=_("Owner's email"),
        max_length=254,
        help_text=_("They get an email to choose their password, as a team invitation."),
    )
    price_list = forms.ChoiceField(label=_("Price list"), required=False)

    def __init__(self, *args, account: Account, **kwargs):
        super().__init__(*args, **kwargs)
        lists = PriceList.objects.filter(owner=account).order_by("name")
        field = self.fields["price_list"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [("", _("None: your own price"))] + [
            (price_list.public_id, price_list.name) for price_list in lists
        ]
