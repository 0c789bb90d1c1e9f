"""Back-office editing of the catalog.

Translations are edited as one field per language (``Name (es)``, ``Terms (fr)``…) and stored
in the model's ``translations`` JSON. Ids derive from natural keys, so the keys (country code,
operator country and slug, product SKU, promotion code) are read-only once created.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.db.models import Count, Q
from django.utils import timezone
from django.utils.text import capfirst, format_lazy
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from catalog import services
from catalog.i18n import translation_languages
from catalog.models import Country, FxRate, Operator, Product, Promotion, PromotionStatus
from catalog.templatetags.catalog_marks import flag
from upstreams.pricing import products_reprice


class TranslationsForm(forms.ModelForm):
    """Maps ``<field>_<language>`` form fields to and from the ``translations`` JSON."""

    translated_fields: tuple[str, ...] = ()

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        stored = self.instance.translations or {}
        for name in self.translated_fields:
            for language in translation_languages():
                key = f"{name}_{language}"
                if key in self.fields and not self.is_bound:
                    self.initial[key] = (stored.get(language) or {}).get(name, "")

    def clean(self):
        data = super().clean()
        translations: dict[str, dict[str, str]] = {}
        for language in translation_languages():
            texts = {
                name: data.get(f"{name}_{language}", "").strip()
                for name in self.translated_fields
                if data.get(f"{name}_{language}", "").strip()
            }
            if texts:
                translations[language] = texts
        self.instance.translations = translations
        return data


def translations_form(model, base=TranslationsForm):
    """A ModelForm class for ``model`` with a declared field per translated text and language."""
    attrs: dict = {"translated_fields": model.TRANSLATABLE_FIELDS}
    for name in model.TRANSLATABLE_FIELDS:
        model_field = model._meta.get_field(name)
        for language in translation_languages():
            widget = (
                forms.Textarea(attrs={"rows": 3})
                if model_field.get_internal_type() == ("TextField")
                else forms.TextInput(attrs={"size": 60})
            )
            attrs[f"{name}_{language}"] = forms.CharField(
                # Lazy: the class is built once, at import, in no visitor's language; its
                # label is written as the admin writes the others ("Nombre (es)").
                label=format_lazy("{} ({})", capfirst(model_field.verbose_name), language),
                required=False,
                max_length=model_field.max_length,
                widget=widget,
            )
    attrs["Meta"] = type("Meta", (), {"model": model, "exclude": ["translations"]})
    return type(f"{model.__name__}AdminForm", (base,), attrs)


def translation_fieldset(model) -> tuple:
    names = [
        f"{name}_{language}"
        for name in model.TRANSLATABLE_FIELDS
        for language in translation_languages()
    ]
    return (_("Translations"), {"fields": names, "description": _("Empty: English is shown.")})


@admin.register(Country)
class CountryAdmin(admin.ModelAdmin):
    form = translations_form(Country)
    list_display = ("code", "flag_image", "name", "calling_code", "currency", "active", "operators")
    list_filter = ("active", "currency")
    search_fields = ("code", "name")
    fieldsets = (
        (None, {"fields": ("code", "name", "calling_code", "currency", "active")}),
        translation_fieldset(Country),
    )

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(operator_count=Count("operators"))

    @admin.display(description=_("flag"))
    def flag_image(self, obj: Country) -> str:
        return flag(obj.code, 20)  # the SVG: emoji flags are empty boxes on some systems

    @admin.display(description=_("operators"), ordering="operator_count")
    def operators(self, obj):
        return obj.operator_count

    def get_readonly_fields(self, request, obj=None):
        return ("code",) if obj else ()


@admin.register(Operator)
class OperatorAdmin(admin.ModelAdmin):
    form = translations_form(Operator)
    list_display = ("name", "country", "public_id", "color", "active", "products")
    list_filter = ("country", "active")
    search_fields = ("name", "slug", "public_id", "country__name", "country__code")
    list_select_related = ("country",)
    prepopulated_fields = {"slug": ("name",)}
    fieldsets = (
        (None, {"fields": ("public_id", "country", "slug", "name", "active")}),
        (_("Brand"), {"fields": ("color", "logo_url")}),
        (_("Number detection"), {"fields": ("carrier_names", "prefixes")}),
        translation_fieldset(Operator),
    )

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .annotate(product_count=Count("products", filter=Q(products__active=True)))
        )

    @admin.display(description=_("active products"), ordering="product_count")
    def products(self, obj):
        return obj.product_count

    def get_readonly_fields(self, request, obj=None):
        return ("public_id", "country", "slug") if obj else ("public_id",)

    def get_prepopulated_fields(self, request, obj=None):
        return {} if obj else self.prepopulated_fields


@admin.register(Product)
class ProductAdmin(admin.ModelAdmin):
    form = translations_form(Product)
    list_display = (
        "name",
        "public_id",
        "operator",
        "country",
        "product_type",
        "denomination",
        "local_amount",
        "local_currency",
        "retail_price",
        "retail_currency",
        "active",
        "offered",
    )
    list_filter = (
        "active",
        "offered",  # "No": priced too close to its cheapest route's cost (docs/pricing.md)
        "product_type",
        "denomination",
        "country",
        ("operator", admin.RelatedOnlyFieldListFilter),
    )
    search_fields = ("name", "sku", "public_id", "operator__name", "country__name")
    list_select_related = ("operator", "country")
    autocomplete_fields = ("operator",)
    list_per_page = 50
    actions = ("activate", "deactivate")
    fieldsets = (
        (None, {"fields": ("public_id", "sku", "operator", "product_type", "active")}),
        (_("Texts"), {"fields": ("name", "description")}),
        (
            _("Value and price"),
            {
                "fields": (
                    "denomination",
                    ("local_amount", "local_currency"),
                    ("retail_price", "retail_currency"),
                    "offered",
                    "validity_days",
                    "required_fields",
                )
            },
        ),
        # What a data, bundle or PIN product gives (contract section 17, "Kinds"): a JSON
        # list checked by Product.clean(); a sync sets it from its provider's description.
        (_("Benefits"), {"fields": ("benefits",)}),
        (
            # A range product (contract section 17): the price of an amount A is
            # A / rate + fee, drawn by pricing from its routes (docs/pricing.md).
            _("Range (any amount)"),
            {
                "fields": (
                    ("range_min", "range_max", "range_step"),
                    ("pricing_rate", "pricing_fee"),
                )
            },
        ),
        translation_fieldset(Product),
        (_("Dates"), {"fields": ("created_at", "updated_at")}),
    )

    def get_readonly_fields(self, request, obj=None):
        fixed = ("public_id", "offered", "created_at", "updated_at")
        return (*fixed, "sku") if obj else fixed

    def save_model(self, request, obj, form, change):
        if change and form.changed_data:
            obj.updated_at = timezone.now()
        super().save_model(request, obj, form, change)
        # A price set by hand is checked against the cost of its routes (and a price rule
        # of the product, its operator or its country wins over it).
        products_reprice(product_ids=[obj.pk])
        obj.refresh_from_db(fields=["retail_price", "pricing_rate", "pricing_fee", "offered"])
        if not obj.offered:
            self.message_user(
                request,
                _(
                    "%(product)s is not offered: its price leaves less than the minimum margin "
                    "over its cheapest route's cost."
                )
                % {"product": obj},
                messages.WARNING,
            )

    @admin.action(description=_("Activate the selected products"))
    def activate(self, request, queryset):
        count = services.product_set_active(products=queryset, active=True)
        self.message_user(
            request,
            ngettext("%d product activated.", "%d products activated.", count) % count,
            messages.SUCCESS,
        )

    @admin.action(description=_("Withdraw the selected products"))
    def deactivate(self, request, queryset):
        count = services.product_set_active(products=queryset, active=False)
        self.message_user(
            request,
            ngettext("%d product withdrawn.", "%d products withdrawn.", count) % count,
            messages.SUCCESS,
        )


class PromotionForm(TranslationsForm):
    def clean(self):
        data = super().clean()
        operator, products = data.get("operator"), data.get("products")
        if operator and products:
            strangers = [p.name for p in products if p.operator_id != operator.pk]
            if strangers:
                self.add_error(
                    "products",
                    _("These products belong to another operator: %(names)s.")
                    % {"names": ", ".join(strangers)},
                )
        return data


class PromotionStatusFilter(admin.SimpleListFilter):
    title = _("status")
    parameter_name = "status"

    def lookups(self, request, model_admin):
        return PromotionStatus.choices

    def queryset(self, request, queryset):
        now = timezone.now()
        if self.value() == PromotionStatus.SCHEDULED:
            return queryset.filter(starts_at__gt=now)
        if self.value() == PromotionStatus.ACTIVE:
            return queryset.filter(starts_at__lte=now, ends_at__gt=now)
        if self.value() == PromotionStatus.ENDED:
            return queryset.filter(ends_at__lte=now)
        return queryset


@admin.register(Promotion)
class PromotionAdmin(admin.ModelAdmin):
    form = translations_form(Promotion, base=PromotionForm)
    list_display = ("name", "operator", "status_display", "starts_at", "ends_at", "scope")
    list_filter = (PromotionStatusFilter, "operator__country", "operator")
    search_fields = ("name", "code", "public_id", "operator__name")
    list_select_related = ("operator__country",)
    autocomplete_fields = ("operator", "products")
    date_hierarchy = "starts_at"
    fieldsets = (
        (None, {"fields": ("public_id", "code", "operator", "products")}),
        (_("Window"), {"fields": ("starts_at", "ends_at")}),
        (_("Texts (English)"), {"fields": ("name", "description", "terms")}),
        translation_fieldset(Promotion),
    )

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(product_count=Count("products"))

    def get_readonly_fields(self, request, obj=None):
        return ("public_id", "code") if obj else ("public_id",)

    @admin.display(description=_("status"))
    def status_display(self, obj):
        return PromotionStatus(obj.status).label

    @admin.display(description=_("applies to"))
    def scope(self, obj):
        if not obj.product_count:
            return _("all products of the operator")
        return ngettext("%d product", "%d products", obj.product_count) % obj.product_count


@admin.register(FxRate)
class FxRateAdmin(admin.ModelAdmin):
    list_display = ("base_currency", "quote_currency", "rate", "set_at")
    search_fields = ("base_currency", "quote_currency")
    readonly_fields = ("set_at",)

    def save_model(self, request, obj, form, change):
        if "rate" in form.changed_data or not change:
            obj.set_at = timezone.now()
        super().save_model(request, obj, form, change)
