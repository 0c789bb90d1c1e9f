"""The Network page's forms: a new agent, and money moved to or from a direct agent."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING

from django import forms
from django.utils.translation import gettext_lazy as _

from accounts.models import Account
from network.models import PriceList, Transfer
from network.serializers_money import TRANSFER_MAX
from reseller.forms import AmountField
from reseller.idempotency import KEY_PATTERN
from wallet.errors import InsufficientBalance

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise

# The form's key is the Idempotency-Key of the transfer it sends, under this prefix (so that
# a site form never answers with a key an API client chose).
SITE_KEY_PREFIX = "site-transfer-"


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


class OwnerInvitationForm(forms.Form):
    """A new invitation for the owner of an agent nobody has joined yet."""

    owner_email = forms.EmailField(label=_("Owner's email"), max_length=254)


def new_form_key() -> str:
    return secrets.token_urlsafe(18)


class TransferForm(forms.Form):
    """``POST /network/transfers`` as a form: a direct agent, a direction, an amount in both
    wallets' currency and a memo. ``key`` (hidden) is new at every rendering of the form: it
    is the transfer's Idempotency-Key, so sending the same rendering twice moves money once."""

    agent = forms.ChoiceField(label=_("Agent"))
    direction = forms.ChoiceField(
        label=_("Direction"),
        choices=[
            (Transfer.Direction.TO_AGENT, _("Fund the agent: from your wallet")),
            (Transfer.Direction.FROM_AGENT, _("Take money back: to your wallet")),
        ],
        initial=Transfer.Direction.TO_AGENT,
        widget=forms.RadioSelect,
    )
    amount = AmountField(
        min_value=Decimal("0.01"),
        max_value=TRANSFER_MAX,
        max_digits=12,
        decimal_places=2,
        localize=True,  # 12,50 read in Spanish and French (12.50 is read too)
        widget=forms.TextInput(attrs={"inputmode": "decimal", "autocomplete": "off"}),
    )
    memo = forms.CharField(
        label=_("Memo"),
        max_length=200,
        required=False,
        help_text=_("Optional. Shown on both statements."),
    )
    key = forms.CharField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args, agents: Sequence[Account], currency: str, **kwargs):
        kwargs.setdefault("initial", {})["key"] = new_form_key()
        super().__init__(*args, **kwargs)
        self.names = {agent.public_id: agent.name for agent in agents}
        field = self.fields["agent"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = list(self.names.items())
        self.fields["amount"].label = _("Amount (%(currency)s)") % {"currency": currency}

    def clean_key(self) -> str:
        key = SITE_KEY_PREFIX + self.cleaned_data.get("key", "")
        if not KEY_PATTERN.match(key) or key == SITE_KEY_PREFIX:
            raise forms.ValidationError(_("This form has expired: send it again."))
        return key

    def renew_key(self) -> None:
        """A new key for the next sending, as the form is shown again (the old one may keep
        a refusal as its answer)."""
        if self.is_bound:
            data = dict(self.data.items())
            data[self.add_prefix("key")] = new_form_key()
            self.data = data

    def non_field_errors(self):
        # The hidden key's error is the form's: nothing else shows it.
        return super().non_field_errors() + self.errors.get("key", [])

    def refusal(self, *, code: str, detail: str) -> StrOrPromise:
        """What the page says of a refusal of the transfer service (its code and detail, as
        the API answers them): in the page's words where the API's would not fit it."""
        direction = self.cleaned_data.get("direction")
        if code == InsufficientBalance.code:
            if direction == Transfer.Direction.FROM_AGENT:
                return _("The agent's balance does not cover this amount. Nothing was moved.")
            return _("Your balance does not cover this transfer. Nothing was moved.")
        if code == "idempotency_key_reused":
            return _(
                "This form was already sent with other values. Nothing more was moved: "
                "check the balances and send it again."
            )
        return detail
