"""Back-office pages of upstream providers (docs/providers.md): the providers with their
health, their operators (the unmapped ones first, mapped here), their routes, the price rules
over their costs (docs/pricing.md), and each recharge's calls to them. Every write goes
through ``upstreams.services`` and ``upstreams.pricing``; secrets are typed once and never
shown again."""

from __future__ import annotations

import logging

from django import forms
from django.contrib import admin, messages
from django.db import models, transaction
from django.urls import reverse
from django.utils.formats import localize
from django.utils.functional import lazy
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe
from django.utils.text import capfirst
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext, ngettext_lazy

from backoffice.admin.tools import ReadOnlyAdmin, ReadOnlyInline, run_each, short_time, two_lines
from backoffice.services import staff_price_rule_delete, staff_price_rule_set
from catalog.models import Operator, Product
from recharges.models import RechargeAttempt
from upstreams import health
from upstreams.adapters import ProviderError
from upstreams.floats import ProviderMoney, provider_money
from upstreams.models import PriceRule, Provider, ProviderOperator, Route, SkippedOffer
from upstreams.selectors import ProviderView, provider_view
from upstreams.services import (
    REQUIRED,
    SECRETS,
    catalog_sync,
    provider_balance_refresh,
    provider_create,
    provider_operator_map,
    provider_set,
)

logger = logging.getLogger(__name__)
STATES = {"healthy": _("healthy"), "degraded": _("degraded"), "open": _("open")}
LINE_BREAK = mark_safe("<br>")  # between a provider's figures in several currencies


def _money_words() -> str:
    """What each figure of a provider's money is: the words of the margin page's provider
    floats (templates/backoffice/margin.html), in the staff's language."""
    return format_html(
        "<p><strong>{}</strong>: {}</p><p><strong>{}</strong>: {} {}</p>"
        '<p><strong>{}</strong>: {} <code class="bo-command">{}</code></p>',
        _("Balance at the provider"),
        _(
            "What the provider's API says our account there holds: its figure, not ours. It is "
            "read after each catalog sync, every minute, and by the action “Read the balance of "
            "selected providers” of the Providers page."
        ),
        _("Float in our books"),
        _(
            "What we prepaid each provider (fund_provider), less the costs of its deliveries, "
            "plus the costs it returned with reversals."
        ),
        _(
            "Starts at 0: until a prepayment is booked with python manage.py fund_provider, it "
            "is below zero by what the deliveries cost."
        ),
        _("Balance less float"),
        _(
            "What the provider holds that the books do not show yet: a prepayment not booked, "
            "or a cost charged differently (see the reconciliation runs). Book a prepayment with:"
        ),
        _("python manage.py fund_provider --provider NAME --amount AMOUNT --currency CUR"),
    )


money_words = lazy(_money_words, str)  # rendered when the page is, in its language
SECRET_WIDGET = forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"})


def _label(field: str):
    """A declared form field's label: the model field's verbose name, as a model form's own
    fields have it (a declared field would otherwise read "Client secret" in every language)."""
    model_field = Provider._meta.get_field(field)
    assert isinstance(model_field, models.Field)
    return capfirst(model_field.verbose_name)


class ProviderAddForm(forms.ModelForm):
    client_secret = forms.CharField(
        label=_label("client_secret"), required=False, widget=SECRET_WIDGET
    )
    api_key = forms.CharField(label=_label("api_key"), required=False, widget=SECRET_WIDGET)
    api_secret = forms.CharField(label=_label("api_secret"), required=False, widget=SECRET_WIDGET)

    class Meta:
        model = Provider
        fields = (
            "name",
            "kind",
            "base_url",
            "auth_url",
            "client_id",
            "client_secret",
            "api_key",
            "api_secret",
            "currency",
            "priority",
            "max_in_flight",
            "enabled",
        )

    def clean(self):
        data = super().clean()
        kind = data.get("kind")
        defaults = ("base_url", "auth_url")  # the provider's production hosts when empty
        for field in REQUIRED.get(kind or "", ()):
            if field not in defaults and not data.get(field):
                self.add_error(field, _("Required for this kind of provider."))
        return data


class ProviderChangeForm(forms.ModelForm):
    client_secret = forms.CharField(
        label=_label("client_secret"),
        required=False,
        widget=SECRET_WIDGET,
        help_text=_("Empty keeps the stored secret."),
    )
    api_key = forms.CharField(
        label=_label("api_key"),
        required=False,
        widget=SECRET_WIDGET,
        help_text=_("Empty keeps the stored key."),
    )
    api_secret = forms.CharField(
        label=_label("api_secret"),
        required=False,
        widget=SECRET_WIDGET,
        help_text=_("Empty keeps the stored secret."),
    )
    callback_secret = forms.CharField(
        label=_label("callback_secret"),
        required=False,
        widget=SECRET_WIDGET,
        help_text=_(
            "For providers that call back (DT One): sent inside the callback URL as HTTP Basic "
            "credentials; callbacks without it are then refused. Empty keeps the stored one."
        ),
    )

    class Meta:
        model = Provider
        fields = ("enabled", "priority", "max_in_flight", "base_url", "auth_url")


HEALTH = ("state", "success_rate", "latency", "in_flight", "routes")
MONEY = ("balance_shown", "float_shown", "difference_shown")


@admin.register(Provider)
class ProviderAdmin(admin.ModelAdmin):
    # Health at a glance, in compact rows that fit 1280 px beside the navigation: no filter
    # column (a handful of rows; the search stays), kind and priority under the name, and
    # "disabled" in the state (docs/backoffice.md, "Lists that fit"). The provider's page
    # has every figure, with the float of the books beside the balance (docs/books.md).
    list_display = ("provider_shown", "state", "balance_listed", "success_rate", "latency",
                    "in_flight", "routes")  # fmt: skip
    search_fields = ("name",)
    readonly_fields = ("name", "kind", "client_id", "secrets_set", "synced_at", *HEALTH, *MONEY)
    actions = ["sync", "read_balance", "close_circuit"]

    def get_form(self, request, obj=None, change=False, **kwargs):
        kwargs["form"] = ProviderChangeForm if obj is not None else ProviderAddForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_readonly_fields(self, request, obj=None):
        return self.readonly_fields if obj is not None else ()

    def get_fieldsets(self, request, obj=None):
        if obj is None:
            return [(None, {"fields": ProviderAddForm.Meta.fields})]
        return [
            (
                None,
                {
                    "fields": (
                        "name",
                        "kind",
                        "enabled",
                        "priority",
                        "max_in_flight",
                        "base_url",
                        "auth_url",
                        "client_id",
                        "secrets_set",
                        "client_secret",
                        "api_key",
                        "api_secret",
                        "callback_secret",
                        "synced_at",
                    )
                },
            ),
            (_("Health, last 15 minutes"), {"fields": HEALTH}),
            (_("Money"), {"fields": MONEY, "description": money_words()}),
        ]

    def has_delete_permission(self, request, obj=None):
        return False  # recharges name it; disable it instead

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        if change:
            saved = provider_set(
                name=obj.name,
                enabled=data["enabled"],
                priority=data["priority"],
                max_in_flight=data["max_in_flight"],
                base_url=data.get("base_url"),
                auth_url=data.get("auth_url"),
                secrets={field: data.get(field) or "" for field in SECRETS},
            )
        else:
            saved = provider_create(**{field: data[field] for field in ProviderAddForm.Meta.fields})
        obj.pk, obj.updated_at = saved.pk, saved.updated_at
        obj._state.adding = False

    def _view(self, obj: Provider) -> ProviderView:
        """The row's figures, read once per row (kept on the row, not on this shared admin)."""
        if not hasattr(obj, "_provider_view"):
            obj._provider_view = provider_view(obj)  # type: ignore[attr-defined]
        return obj._provider_view  # type: ignore[attr-defined]

    @admin.display(description=_("provider"), ordering="name")
    def provider_shown(self, obj: Provider) -> str:
        below = _("%(kind)s · priority %(priority)d") % {
            "kind": obj.get_kind_display(),
            "priority": obj.priority,
        }
        return two_lines(obj.name, below)

    @admin.display(description=_("state"))
    def state(self, obj: Provider) -> object:
        state = STATES.get(self._view(obj).state, self._view(obj).state)
        if not obj.enabled:  # not routed to, whatever its health
            return two_lines(_("disabled"), state)
        return state

    @admin.display(description=_("balance at the provider"))
    def balance_shown(self, obj: Provider) -> str:
        if obj.balance is None:
            return "—"
        read = _("read %(time)s") % {"time": short_time(obj.balance_checked_at)}
        return two_lines(f"{localize(obj.balance)} {obj.balance_currency}", read, nowrap=True)

    @admin.display(description=_("balance"))
    def balance_listed(self, obj: Provider) -> str:
        return self.balance_shown(obj)

    def _money(self, obj: Provider) -> list[ProviderMoney]:
        if not hasattr(obj, "_provider_money"):
            obj._provider_money = provider_money(obj)  # type: ignore[attr-defined]
        return obj._provider_money  # type: ignore[attr-defined]

    @admin.display(description=_("float in our books"))
    def float_shown(self, obj: Provider) -> str:
        rows = self._money(obj)
        if not rows:
            return str(_("nothing booked yet"))
        return format_html_join(
            LINE_BREAK, "{} {}", ((localize(row.float), row.currency) for row in rows)
        )

    @admin.display(description=_("balance less float"))
    def difference_shown(self, obj: Provider) -> str:
        shown = [
            (localize(row.difference), row.currency)
            for row in self._money(obj)
            if row.difference is not None
        ]
        if not shown:
            return "—"
        return format_html_join(LINE_BREAK, "{} {}", shown)

    @admin.display(description=_("success"))
    def success_rate(self, obj: Provider) -> str:
        view = self._view(obj)
        if view.success_rate is None:
            return "—"
        calls = ngettext("%(count)d call", "%(count)d calls", view.calls) % {"count": view.calls}
        return two_lines(f"{view.success_rate * 100:.1f}%", calls)

    @admin.display(description=_("p50/p95 ms"))
    def latency(self, obj: Provider) -> str:
        view = self._view(obj)
        if view.latency_p50_ms is None:
            return "—"
        return f"≤{view.latency_p50_ms} / ≤{view.latency_p95_ms}"

    @admin.display(description=_("in flight"))
    def in_flight(self, obj: Provider) -> int:
        return self._view(obj).in_flight

    @admin.display(description=_("routes"))
    def routes(self, obj: Provider) -> int:
        return self._view(obj).routes

    @admin.display(description=_("secrets"))
    def secrets_set(self, obj: Provider) -> str:
        names = [name.replace("_", " ") for name in SECRETS if getattr(obj, name)]
        return _("set: %(names)s") % {"names": ", ".join(names)} if names else "—"

    @admin.action(description=_("Sync the catalog of selected providers"), permissions=["change"])
    def sync(self, request, queryset):
        run_each(
            self,
            request,
            queryset,
            lambda provider: self.message_user(
                request, f"{provider.name}: {catalog_sync(provider=provider).line()}"
            ),
            done_message=ngettext_lazy(
                "%(count)d provider synced.", "%(count)d providers synced.", "count"
            ),
        )

    @admin.action(description=_("Read the balance of selected providers"), permissions=["change"])
    def read_balance(self, request, queryset):
        run_each(
            self,
            request,
            queryset,
            lambda provider: provider_balance_refresh(provider=provider),
            done_message=ngettext_lazy(
                "%(count)d balance read.", "%(count)d balances read.", "count"
            ),
        )

    @admin.action(description=_("Close the circuit of selected providers"), permissions=["change"])
    def close_circuit(self, request, queryset):
        run_each(
            self,
            request,
            queryset,
            lambda provider: health.reset(provider.name),
            done_message=ngettext_lazy(
                "%(count)d circuit closed.", "%(count)d circuits closed.", "count"
            ),
        )


class MappedFilter(admin.SimpleListFilter):
    title = _("mapped")
    parameter_name = "mapped"

    def lookups(self, request, model_admin):
        return (("no", _("Unmapped")), ("yes", _("Mapped")))

    def queryset(self, request, queryset):
        if self.value() == "no":
            return queryset.filter(operator__isnull=True)
        if self.value() == "yes":
            return queryset.filter(operator__isnull=False)
        return queryset


class ProviderOperatorForm(forms.ModelForm):
    class Meta:
        model = ProviderOperator
        fields = ("operator",)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        country = self.instance.country if self.instance.pk else None
        operators = Operator.objects.filter(active=True).order_by("name")
        if country:
            operators = operators.filter(country_id=country)
        self.fields["operator"].queryset = operators
        self.fields["operator"].required = True


@admin.register(ProviderOperator)
class ProviderOperatorAdmin(admin.ModelAdmin):
    """Operators as each provider lists them; the unmapped ones get no route until staff
    choose the catalog operator they are."""

    form = ProviderOperatorForm
    list_display = ("name", "provider", "country", "upstream_id", "operator", "mapped_by")
    list_filter = (MappedFilter, "provider", "country")
    search_fields = ("name", "upstream_id", "operator__name")
    list_select_related = ("provider", "operator")
    readonly_fields = ("provider", "upstream_id", "name", "country", "mapped_by")
    fields = ("provider", "upstream_id", "name", "country", "operator", "mapped_by")

    def has_add_permission(self, request):
        return False  # they come from the provider's catalog

    def has_delete_permission(self, request, obj=None):
        return False

    def save_model(self, request, obj, form, change):
        provider_operator_map(
            provider=obj.provider,
            upstream_id=obj.upstream_id,
            operator_id=form.cleaned_data["operator"].public_id,
        )
        provider = obj.provider
        # The admin saves in a transaction: the provider is called once it has committed.
        transaction.on_commit(lambda: _sync_quietly(provider))


def _sync_quietly(provider: Provider) -> None:
    try:
        catalog_sync(provider=provider)
    except ProviderError:
        logger.warning("catalog of %s not synced after a mapping", provider.name, exc_info=True)


@admin.register(Route)
class RouteAdmin(ReadOnlyAdmin):
    list_display = ("product", "provider", "cost", "cost_currency", "sku", "active", "updated_at")
    list_filter = ("active", "provider", "product__country")
    search_fields = ("product__name", "product__public_id", "sku", "provider__name")
    list_select_related = ("product", "provider")


@admin.register(SkippedOffer)
class SkippedOfferAdmin(ReadOnlyAdmin):
    """What the last sync of each provider could not sell, and why (contract section 17)."""

    list_display = (
        "name",
        "provider",
        "country",
        "operator_name",
        "upstream_product_id",
        "reason",
        "seen_at",
    )
    list_filter = ("provider", "country")
    search_fields = ("name", "operator_name", "upstream_product_id", "reason")
    list_select_related = ("provider",)


class PriceRuleForm(forms.ModelForm):
    class Meta:
        model = PriceRule
        fields = ("country", "operator", "product", "markup_percent")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.is_bound:
            # The autocomplete widgets look the posted ids up to show them again: an id that
            # is not one (NUL, letters for a number) would fail that query with a 500.
            # Dropped here, the field reports it as missing instead.
            data = self.data.copy()
            for name, valid in (("country", str.isalpha), ("operator", str.isdigit),
                                ("product", str.isdigit)):  # fmt: skip
                value = data.get(name)
                if value and not (value.isascii() and valid(value)):
                    data[name] = ""
            self.data = data

    def clean(self):
        data = super().clean()
        if self.instance.pk is None:
            given = [field for field in ("country", "operator", "product") if data.get(field)]
            if len(given) != 1:
                raise forms.ValidationError(
                    _("Choose exactly one of a country, an operator or a product.")
                )
        return data


@admin.register(PriceRule)
class PriceRuleAdmin(admin.ModelAdmin):
    """Markups over the cheapest healthy route's cost (docs/pricing.md). Saving one reprices
    its products at once through ``upstreams.pricing``; the products whose price is too close
    to their cost are listed from here (the catalog's product list, "offered: No")."""

    form = PriceRuleForm
    list_display = ("scope_shown", "target_shown", "markup_percent", "updated_at")
    list_select_related = ("country", "operator", "product")
    search_fields = ("country__code", "operator__name", "operator__public_id", "product__name")
    autocomplete_fields = ("country", "operator", "product")

    def get_readonly_fields(self, request, obj=None):
        return ("country", "operator", "product") if obj is not None else ()

    @admin.display(description=_("for"))
    def scope_shown(self, obj: PriceRule) -> str:
        return str(PriceRule.Scope(obj.scope).label)

    @admin.display(description=_("what"))
    def target_shown(self, obj: PriceRule) -> str:
        return str(obj.product or obj.operator or obj.country)

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        country, operator, product = (
            (obj.country, obj.operator, obj.product)
            if change
            else (data.get("country"), data.get("operator"), data.get("product"))
        )
        rule, repriced = staff_price_rule_set(
            actor=request.user,
            country=country.code if country else None,
            operator=operator.public_id if operator else None,
            product=product.public_id if product else None,
            markup_percent=data["markup_percent"],
        )
        obj.pk, obj.updated_at = rule.pk, rule.updated_at
        obj._state.adding = False
        self.message_user(request, repriced.line())

    def delete_model(self, request, obj):
        staff_price_rule_delete(actor=request.user, rule=obj)

    def delete_queryset(self, request, queryset):
        for rule in queryset:
            self.delete_model(request, rule)

    def changelist_view(self, request, extra_context=None):
        withdrawn = Product.objects.filter(active=True, offered=False).count()
        if withdrawn:
            url = reverse("admin:catalog_product_changelist") + "?active__exact=1&offered__exact=0"
            text = ngettext(
                "%(count)d product is not offered: its price is too close to its cost.",
                "%(count)d products are not offered: their price is too close to their cost.",
                withdrawn,
            ) % {"count": withdrawn}
            self.message_user(
                request, format_html('<a href="{}">{}</a>', url, text), messages.WARNING
            )
        return super().changelist_view(request, extra_context)


class RechargeAttemptInline(ReadOnlyInline, admin.TabularInline):
    """Every call to a provider for the recharge: the evidence of its route and failovers."""

    model = RechargeAttempt
    fields = ("created_at", "provider", "action", "outcome", "code", "message", "duration_ms")
    readonly_fields = fields
    show_change_link = False
    verbose_name_plural = _("calls to providers")
