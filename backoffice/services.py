"""Staff actions: each calls the owning app's service and records itself in the audit trail.

The admin (and anything else staff use) calls these, never the underlying services directly,
so every change a person makes is recorded with who, when and what, in the same transaction
as the change.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from django.db import models, transaction
from django.utils.translation import gettext_lazy as _

from accounts import services as account_services
from accounts.models import Account, ApiKey, User
from backoffice.models import StaffAction
from checkout.disputes import card_purchases_unfreeze
from recharges import processor
from recharges.models import Recharge
from recharges.pins import pin_body
from recharges.tasks import recharges_enqueue
from reseller.errors import ValidationFailed
from upstreams import pricing
from upstreams.models import PriceRule
from wallet import services as wallet_services
from wallet.models import LedgerEntry, TopUp, Wallet


def audit(
    *,
    actor: User | None,
    action: str,
    target: models.Model | None = None,
    detail: dict[str, Any] | None = None,
) -> StaffAction:
    """Record one staff action. ``target`` is the object acted on (None for bulk exports)."""
    target_type = target_id = target_repr = ""
    if target is not None:
        target_type = target._meta.label_lower
        target_id = str(getattr(target, "public_id", None) or target.pk)
        target_repr = str(target)[:200]
    return StaffAction.objects.create(
        actor=actor,
        action=action,
        target_type=target_type,
        target_id=target_id,
        target_repr=target_repr,
        detail=_jsonable(detail or {}),
    )


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, Decimal):
        return str(value)
    return value


# Wallet -----------------------------------------------------------------------------------------


@transaction.atomic
def staff_topup_approve(*, topup: TopUp, actor: User) -> TopUp:
    topup = wallet_services.topup_approve(topup_id=topup.pk, by=actor)
    audit(
        actor=actor,
        action="topup.approve",
        target=topup,
        detail={"amount": topup.amount, "currency": topup.currency},
    )
    return topup


@transaction.atomic
def staff_topup_reject(*, topup: TopUp, actor: User, note: str) -> TopUp:
    topup = wallet_services.topup_reject(topup_id=topup.pk, by=actor, note=note)
    audit(
        actor=actor,
        action="topup.reject",
        target=topup,
        detail={"amount": topup.amount, "currency": topup.currency, "note": note},
    )
    return topup


@transaction.atomic
def staff_wallet_adjust(
    *, wallet: Wallet, amount: Decimal, reason: str, actor: User
) -> LedgerEntry:
    entry = wallet_services.wallet_adjust(
        wallet_id=wallet.pk, amount=amount, reason=reason, by=actor
    )
    audit(
        actor=actor,
        action="wallet.adjust",
        target=wallet,
        detail={
            "amount": entry.amount,
            "currency": entry.currency,
            "reason": reason,
            "entry": entry.public_id,
        },
    )
    return entry


# Recharges --------------------------------------------------------------------------------------


@transaction.atomic
def staff_recharge_retry(*, recharge: Recharge, actor: User) -> Recharge:
    recharge = processor.recharge_retry(
        recharge_id=recharge.pk, actor=actor, enqueue=recharges_enqueue
    )
    audit(
        actor=actor,
        action="recharge.retry",
        target=recharge,
        detail={"amount": recharge.amount, "currency": recharge.currency},
    )
    return recharge


@transaction.atomic
def staff_recharge_pin_reveal(*, recharge: Recharge, actor: User, reason: str) -> dict | None:
    """A delivered PIN in full, for a member of staff (contract section 17): recorded first,
    in the same transaction (``recharge.pin_reveal``, with the reason and the last 4 digits,
    never the code). None when the recharge has no PIN."""
    pin = pin_body(recharge)
    if pin is None:
        return None
    audit(
        actor=actor,
        action="recharge.pin_reveal",
        target=recharge,
        detail={"reason": reason, "last4": recharge.pin_last4},
    )
    return pin


@transaction.atomic
def staff_recharge_refund(*, recharge: Recharge, actor: User, reason: str) -> Recharge:
    """Fail an undelivered recharge (if not failed already) and refund it, once."""
    before = recharge.status
    recharge = processor.recharge_fail_by_staff(recharge_id=recharge.pk, actor=actor, reason=reason)
    audit(
        actor=actor,
        action="recharge.refund",
        target=recharge,
        detail={
            "from_status": before,
            "amount": recharge.amount,
            "currency": recharge.currency,
            "reason": reason,
        },
    )
    return recharge


# Accounts and keys ------------------------------------------------------------------------------


@transaction.atomic
def staff_api_key_revoke(*, key: ApiKey, actor: User) -> ApiKey:
    key = account_services.api_key_revoke(key=key, by=actor)
    audit(actor=actor, action="api_key.revoke", target=key, detail={"prefix": key.prefix})
    return key


@transaction.atomic
def staff_api_key_set_limits(
    *,
    key: ApiKey,
    actor: User,
    rate_limit_per_minute: int | None,
    max_units_per_request: int | None,
) -> ApiKey:
    before = {
        "rate_limit_per_minute": key.rate_limit_per_minute,
        "max_units_per_request": key.max_units_per_request,
    }
    key = account_services.api_key_set_limits(
        key=key,
        rate_limit_per_minute=rate_limit_per_minute,
        max_units_per_request=max_units_per_request,
    )
    audit(
        actor=actor,
        action="api_key.set_limits",
        target=key,
        detail={
            "before": before,
            "after": {
                "rate_limit_per_minute": rate_limit_per_minute,
                "max_units_per_request": max_units_per_request,
            },
        },
    )
    return key


@transaction.atomic
def staff_account_set_b2b(*, account: Account, is_b2b: bool, actor: User) -> Account:
    before = account.is_b2b
    account = account_services.account_set_b2b(account=account, is_b2b=is_b2b)
    audit(
        actor=actor,
        action="account.set_b2b",
        target=account,
        detail={"before": before, "after": is_b2b},
    )
    return account


@transaction.atomic
def staff_account_set_suspended(*, account: Account, suspended: bool, actor: User) -> Account:
    """Suspend an account, which refuses its keys and sessions and those of every descendant
    in its network (contract section 18), or resume it."""
    before = account.suspended_at is not None
    account = account_services.account_set_suspended(
        account=account, suspended=suspended, by_depth=account_services.STAFF_LEVEL
    )
    audit(
        actor=actor,
        action="account.suspend" if suspended else "account.resume",
        target=account,
        detail={"before": before, "after": suspended, "depth": account.depth},
    )
    return account


@transaction.atomic
def staff_account_unfreeze_cards(*, account: Account, actor: User) -> Account:
    """Card purchases frozen by a dispute or a fraud warning allowed again (docs/fraud.md)."""
    changed = card_purchases_unfreeze(account=account, by=actor)
    audit(actor=actor, action="account.unfreeze_cards", target=account, detail={"changed": changed})
    return account


def _clean_discount(value: Decimal | str) -> Decimal:
    try:
        percent = Decimal(str(value)).quantize(Decimal("0.01"))
    except (InvalidOperation, ValueError) as exc:
        raise ValidationFailed(
            fields=[{"field": "discountPercent", "code": "invalid", "message": _("A number.")}]  # type: ignore[dict-item]
        ) from exc
    if not Decimal("0") <= percent <= Decimal("100"):
        raise ValidationFailed(
            fields=[
                {
                    "field": "discountPercent",
                    "code": "out_of_range",
                    "message": _("Between 0 and 100."),  # type: ignore[dict-item]
                }
            ]
        )
    return percent


@transaction.atomic
def staff_account_set_discount(
    *, account: Account, discount_percent: Decimal, actor: User
) -> Account:
    """Set the discount an account's prices get; applies to the next quote or order."""
    percent = _clean_discount(discount_percent)
    before = account_services.account_set_discount(account=account, discount_percent=percent)
    audit(
        actor=actor,
        action="account.set_discount",
        target=account,
        detail={"before": before, "after": percent},
    )
    return account


# Price rules ------------------------------------------------------------------------------------


@transaction.atomic
def staff_price_rule_set(
    *,
    actor: User,
    markup_percent: object,
    country: str | None = None,
    operator: str | None = None,
    product: str | None = None,
) -> tuple[PriceRule, pricing.Repriced]:
    """Set a markup over cost (docs/pricing.md); its products are repriced at once."""
    rule, repriced = pricing.price_rule_set(
        country=country, operator=operator, product=product, markup_percent=markup_percent
    )
    audit(
        actor=actor,
        action="price_rule.set",
        target=rule,
        detail={
            "scope": rule.scope,
            "target": rule.target,
            "markupPercent": str(rule.markup_percent),
            "repriced": repriced.line(),
        },
    )
    return rule, repriced


@transaction.atomic
def staff_price_rule_delete(*, actor: User, rule: PriceRule) -> pricing.Repriced:
    """Remove a rule; its products keep their prices and are checked against the floor."""
    scope, target, markup = rule.scope, rule.target, str(rule.markup_percent)
    repriced = pricing.price_rule_delete(rule=rule)
    audit(
        actor=actor,
        action="price_rule.delete",
        detail={
            "scope": scope,
            "target": target,
            "markupPercent": markup,
            "repriced": repriced.line(),
        },
    )
    return repriced


# Exports ----------------------------------------------------------------------------------------


def staff_export(*, actor: User, what: str, ids: list[str]) -> StaffAction:
    """Exports change nothing but are recorded: who took which rows out of the system."""
    return audit(
        actor=actor,
        action=f"{what}.export_csv",
        detail={"count": len(ids), "ids": ids[:1000]},
    )
