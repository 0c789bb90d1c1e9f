"""Price lists: creating, reading, changing, deleting and assigning them (contract section 18,
"Price lists"; docs/network.md).

One mechanism for staff and for parents. A list belongs to an account (for its direct agents)
or to the platform (``owner`` None, made by staff, for top accounts). Its rules are markups
over the seller's own price for a country, an operator or a product; the most specific wins
(``network.prices``). A parent's markups are ≥ 0 (an agent never buys below its parent); the
platform's may be negative, above -100 (a discount under retail).

The API, the CLI (``set_price_list``) and the agents' PATCH call these services; the checks are
here, so every way in refuses the same things with the same codes.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.db.models import Prefetch, ProtectedError, QuerySet
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts.models import Account
from catalog.models import Country, Operator, Product
from network.models import MARKUP_LIMIT, PriceList, PriceListAssignment, PriceListRule
from reseller.errors import ApplicationError, NotFound, ValidationFailed

PLATFORM_MARKUP_FLOOR = Decimal(-100)  # excluded: a platform rule is over -100 %
MAX_RULES = 1000


class PriceListInUse(ApplicationError):
    """A list assigned to an account cannot be deleted (assign another first)."""

    code = "price_list_in_use"
    status = 409
    title = gettext_lazy("Price list in use")
    default_detail = gettext_lazy(
        "This price list is assigned to an account: assign another list (or none) first."
    )


@dataclass(frozen=True)
class RuleSpec:
    """One rule as the API and the CLI give it: exactly one of a country code, an operator's
    public id or a product's public id, and its markup percent."""

    markup_percent: Decimal
    country: str | None = None
    operator: str | None = None
    product: str | None = None


# -- selectors ------------------------------------------------------------------------------


def _with_rules(query: QuerySet[PriceList]) -> QuerySet[PriceList]:
    rules = PriceListRule.objects.select_related("operator", "product").order_by("id")
    return query.prefetch_related(Prefetch("rules", queryset=rules))


def price_list_list(*, owner: Account | None) -> QuerySet[PriceList]:
    """The lists of ``owner`` (None: the platform's), by name, with their rules."""
    if owner is None:
        return _with_rules(PriceList.objects.filter(owner__isnull=True))
    return _with_rules(PriceList.objects.filter(owner=owner))


def price_list_get(*, owner: Account | None, public_id: str) -> PriceList:
    """One list of ``owner`` (None: the platform's); any other list is 404 ``not_found``, the
    list a parent assigned to the caller included (an agent never sees its parent's prices)."""
    found = price_list_list(owner=owner).filter(public_id=public_id).first()
    if found is None:
        raise NotFound(_("No price list of yours has this id."))
    return found


def price_list_assigned(*, account: Account) -> PriceList | None:
    """The list that prices ``account`` (for its parent's or staff's eyes only)."""
    found = PriceListAssignment.objects.filter(account=account).select_related("price_list").first()
    return found.price_list if found is not None else None


def price_list_usage(*, price_list: PriceList) -> int:
    """How many accounts the list prices."""
    return PriceListAssignment.objects.filter(price_list=price_list).count()


# -- services -------------------------------------------------------------------------------


def _field_error(field: str, code: str, message: str) -> dict[str, str]:
    return {"field": field, "code": code, "message": message}


def _resolve_rules(*, owner: Account | None, rules: list[RuleSpec]) -> list[PriceListRule]:
    """The rules as rows (not saved), or ``ValidationFailed`` naming every bad one."""
    if len(rules) > MAX_RULES:
        raise ValidationFailed(
            fields=[_field_error("rules", "too_many", _("At most %d rules.") % MAX_RULES)]
        )
    errors: list[dict[str, str]] = []
    countries = set(
        Country.objects.filter(
            code__in={r.country.upper() for r in rules if r.country}
        ).values_list("code", flat=True)
    )
    operators = {
        o.public_id: o
        for o in Operator.objects.filter(public_id__in={r.operator for r in rules if r.operator})
    }
    products = {
        p.public_id: p
        for p in Product.objects.filter(public_id__in={r.product for r in rules if r.product})
    }
    rows: list[PriceListRule] = []
    seen: set[tuple[str, str]] = set()
    for n, rule in enumerate(rules):
        at = f"rules[{n}]"
        scopes = [
            (k, v)
            for k, v in (
                ("country", rule.country),
                ("operator", rule.operator),
                ("product", rule.product),
            )
            if v
        ]
        if len(scopes) != 1:
            errors.append(
                _field_error(
                    at,
                    "invalid_rule",
                    _("A rule names exactly one of country, operator or product."),
                )
            )
            continue
        kind, value = scopes[0]
        if kind == "country":
            value = value.upper()
        markup = rule.markup_percent
        too_low = markup < 0 if owner is not None else markup <= PLATFORM_MARKUP_FLOOR
        if too_low or markup > MARKUP_LIMIT:
            message = (
                _("A markup is from 0 to %(limit)s: an agent never buys below its parent.")
                if owner is not None
                else _("A markup is over -100 and at most %(limit)s.")
            ) % {"limit": MARKUP_LIMIT}
            errors.append(_field_error(f"{at}.markupPercent", "invalid_markup", message))
        if (kind, value) in seen:
            errors.append(
                _field_error(f"{at}.{kind}", "duplicate_rule", _("This scope has a rule already."))
            )
        seen.add((kind, value))
        row = PriceListRule(markup_percent=markup)
        if kind == "country":
            if value not in countries:
                errors.append(
                    _field_error(f"{at}.country", "unknown_country", _("No such country."))
                )
            row.country_id = value
        elif kind == "operator":
            if value not in operators:
                errors.append(
                    _field_error(f"{at}.operator", "unknown_operator", _("No such operator."))
                )
            row.operator = operators.get(value)
        else:
            if value not in products:
                errors.append(
                    _field_error(f"{at}.product", "unknown_product", _("No such product."))
                )
            row.product = products.get(value)
        rows.append(row)
    if errors:
        raise ValidationFailed(fields=errors)
    return rows


def _name_checked(*, owner: Account | None, name: str, exclude: int | None = None) -> str:
    name = name.strip()
    if not name or len(name) > 100:
        raise ValidationFailed(
            fields=[_field_error("name", "invalid", _("A name has 1 to 100 characters."))]
        )
    taken = price_list_list(owner=owner).filter(name=name)
    if exclude is not None:
        taken = taken.exclude(pk=exclude)
    if taken.exists():
        raise _name_taken()
    return name


def _name_taken() -> ValidationFailed:
    return ValidationFailed(
        fields=[_field_error("name", "unique", _("You have a price list of this name."))]
    )


@transaction.atomic
def price_list_create(*, owner: Account | None, name: str, rules: list[RuleSpec]) -> PriceList:
    """A new list of ``owner`` (None: the platform's, staff only)."""
    name = _name_checked(owner=owner, name=name)
    rows = _resolve_rules(owner=owner, rules=rules)
    try:
        with transaction.atomic():
            price_list = PriceList.objects.create(owner=owner, name=name)
    except IntegrityError as exc:  # the same name, created meanwhile
        raise _name_taken() from exc
    for row in rows:
        row.price_list = price_list
    PriceListRule.objects.bulk_create(rows)
    return price_list_get(owner=owner, public_id=price_list.public_id)


@transaction.atomic
def price_list_update(*, price_list: PriceList, name: str, rules: list[RuleSpec]) -> PriceList:
    """Replace the list's name and rules (PUT): the accounts it prices pay the new prices
    from their next order."""
    owner = price_list.owner
    name = _name_checked(owner=owner, name=name, exclude=price_list.pk)
    rows = _resolve_rules(owner=owner, rules=rules)
    locked = PriceList.objects.select_for_update(of=("self",)).get(pk=price_list.pk)
    locked.name, locked.updated_at = name, timezone.now()
    try:
        with transaction.atomic():
            locked.save(update_fields=["name", "updated_at"])
    except IntegrityError as exc:
        raise _name_taken() from exc
    PriceListRule.objects.filter(price_list=locked).delete()
    for row in rows:
        row.price_list = locked
    PriceListRule.objects.bulk_create(rows)
    return price_list_get(owner=owner, public_id=locked.public_id)


@transaction.atomic
def price_list_delete(*, price_list: PriceList) -> None:
    """Delete a list no account is priced by; one in use is 409 ``price_list_in_use``."""
    locked = PriceList.objects.select_for_update(of=("self",)).get(pk=price_list.pk)
    if PriceListAssignment.objects.filter(price_list=locked).exists():
        raise PriceListInUse()
    try:
        with transaction.atomic():
            locked.delete()
    except ProtectedError as exc:  # assigned meanwhile (the assignment's foreign key protects)
        raise PriceListInUse() from exc


@transaction.atomic
def price_list_assign(*, account: Account, price_list: PriceList | None) -> None:
    """Price ``account`` by ``price_list`` (None: no list: an agent pays its parent's price,
    a top account gets its ``discountPercent`` again). A parent assigns only its own lists to
    its direct agents; staff assign only the platform's lists to top accounts. Anything else
    is 400 ``validation_error`` naming ``priceList``."""
    if price_list is not None:
        allowed = (
            price_list.owner_id == account.parent_id
            if account.parent_id is not None
            else price_list.owner_id is None
        )
        if not allowed:
            message = (
                _("An agent is priced by one of its parent's own price lists.")
                if account.parent_id is not None
                else _("A top account is priced by one of the platform's price lists.")
            )
            raise ValidationFailed(
                fields=[_field_error("priceList", "invalid_price_list", message)]
            )
        PriceListAssignment.objects.update_or_create(
            account=account,
            defaults={"price_list": price_list, "updated_at": timezone.now()},
        )
    else:
        PriceListAssignment.objects.filter(account=account).delete()
