from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from webhooks.catalogue import EVENT_TYPES


def _event_choices():
    return [(name, f"{name}: {description}") for name, description in EVENT_TYPES.items()]


class EndpointForm(forms.Form):
    url = forms.CharField(
        label=_("Endpoint URL"),
        max_length=2048,
        help_text=_("Where we POST the events, e.g. https://example.com/webhooks/reseller."),
        widget=forms.URLInput(attrs={"placeholder": "https://", "autocomplete": "off"}),
    )
    events = forms.MultipleChoiceField(
        label=_("Events"),
        required=False,
        choices=_event_choices,
        widget=forms.CheckboxSelectMultiple,
        help_text=_("None selected: every event."),
    )
    description = forms.CharField(label=_("Description"), max_length=200, required=False)


class EndpointCreateForm(EndpointForm):
    mode = forms.ChoiceField(
        label=_("Mode"),
        choices=[("test", _("Test")), ("live", _("Live"))],
        initial="test",
        help_text=_("Test endpoints get the events of test keys; live ones the real events."),
    )
    # One-time token of this form, so a reload of the result page cannot create a second one.
    form_token = forms.CharField(widget=forms.HiddenInput)


class EndpointEditForm(EndpointForm):
    enabled = forms.BooleanField(label=_("Enabled"), required=False)
