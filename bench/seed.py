#!/usr/bin/env python
"""The Django side of the benchmark: seeds and inspects the bench database.

bench/run.py runs this as a subprocess with the bench environment (DATABASE_URL of a fresh
``reseller_bench_*`` database, production settings); it prints one JSON object on stdout.

    seed.py init --clients 32          catalog of 100 products, B2B accounts, keys, wallets
    seed.py catalog --total 10000      grow the catalog (1 in 10 products in the bench country)
    seed.py ledger --entries 1000000   bulk-insert ledger entries into the balance wallet
    seed.py queued --limit 500         ids of queued recharges (the processor's work)
    seed.py status                     recharges by status, ledger mismatches
    seed.py routing-operators          Mexico's Telcel and AT&T, as the fake providers name them
    seed.py routes                     products sold by several providers, routes cheapest first
    seed.py accounts --prefix fair     fresh funded B2B accounts with a live key each
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reseller.settings.production")

import django  # noqa: E402

django.setup()

from django.db import connection, transaction  # noqa: E402
from django.db.models import Count  # noqa: E402

from accounts.services import api_key_create, user_create  # noqa: E402
from catalog import services  # noqa: E402
from catalog.ids import product_public_id  # noqa: E402
from catalog.models import Operator, Product  # noqa: E402
from recharges.models import Recharge  # noqa: E402
from wallet.models import Wallet  # noqa: E402
from wallet.selectors import ledger_mismatches  # noqa: E402
from wallet.services import wallet_topup_manual  # noqa: E402

COUNTRY = "MX"
RECIPIENT = "+525512345678"
COUNTRIES = [
    ("MX", "Mexico", "+52", "MXN"),
    ("NG", "Nigeria", "+234", "NGN"),
    ("IN", "India", "+91", "INR"),
    ("PH", "Philippines", "+63", "PHP"),
    ("CO", "Colombia", "+57", "COP"),
    ("DO", "Dominican Republic", "+1", "DOP"),
    ("GH", "Ghana", "+233", "GHS"),
    ("KE", "Kenya", "+254", "KES"),
    ("HT", "Haiti", "+509", "HTG"),
    ("JM", "Jamaica", "+1", "JMD"),
]
WALLET_FUNDS = Decimal("1000000.00")
BALANCE_EMAIL = "bench-balance@reseller.example"


def operators() -> dict[str, list[Operator]]:
    result: dict[str, list[Operator]] = {}
    for code, name, calling, currency in COUNTRIES:
        country, _ = services.country_upsert(
            code=code, name=name, calling_code=calling, currency=currency
        )
        result[code] = [
            services.operator_upsert(country=country, slug=f"op{n}", name=f"{name} {n}")[0]
            for n in range(3)
        ]
    return result


def add_products(ops: dict[str, list[Operator]], *, country: str, count: int) -> None:
    start = Product.objects.filter(country_id=country).count()
    batch = []
    for n in range(start, start + max(0, count)):
        operator = ops[country][n % len(ops[country])]
        sku = f"BENCH-{country}-{n}"
        batch.append(
            Product(
                sku=sku,
                public_id=product_public_id(sku),
                operator=operator,
                country_id=country,
                name=f"{operator.name} top-up {n}",
                product_type="data" if n % 4 == 0 else "airtime",
                local_amount=Decimal(10 + n % 500),
                local_currency=operator.country.currency,
                retail_price=Decimal("1.00") + Decimal(n % 500) / 10,
            )
        )
    Product.objects.bulk_create(batch, batch_size=1000)


def grow_catalog(*, total: int, matching: int) -> dict:
    """Products until the catalog has ``total``, ``matching`` of them in COUNTRY."""
    ops = operators()
    add_products(ops, country=COUNTRY, count=matching - count_in(COUNTRY))
    others = [code for code, *_ in COUNTRIES if code != COUNTRY]
    missing = total - Product.objects.count()
    for index, code in enumerate(others):
        share = missing // len(others) + (1 if index < missing % len(others) else 0)
        add_products(ops, country=code, count=share)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE catalog_product")
    return {"products": Product.objects.count(), "matching": count_in(COUNTRY)}


def count_in(country: str) -> int:
    return Product.objects.filter(country_id=country).count()


def add_promotions(ops: dict[str, list[Operator]]) -> None:
    """An active operator-wide promotion and a scheduled one on ten products, as in the demo."""
    now = datetime.now(UTC)
    services.promotion_upsert(
        code="bench-wide",
        operator=ops[COUNTRY][0],
        name="Operator-wide",
        description="Double airtime.",
        starts_at=now - timedelta(days=1),
        ends_at=now + timedelta(days=30),
    )
    services.promotion_upsert(
        code="bench-products",
        operator=ops[COUNTRY][1],
        products=list(Product.objects.filter(operator=ops[COUNTRY][1]).order_by("pk")[:10]),
        name="On ten products",
        description="Triple data.",
        starts_at=now + timedelta(hours=24),
        ends_at=now + timedelta(days=3),
    )


def b2b_user(email: str):
    user = user_create(email=email, password=None, is_b2b=True)
    wallet_topup_manual(account=user.account, amount=WALLET_FUNDS, note="bench")
    return user


def key_for(user, name: str) -> str:
    _key, plaintext = api_key_create(
        account=user.account, user=user, name=name, mode="live", ip_whitelist=[]
    )
    return plaintext


def cmd_init(args) -> dict:
    ops = operators()
    for quote, rate in (("USD", "1.08"), ("GBP", "0.85")):
        with transaction.atomic():
            services.fx_rate_set(base_currency="EUR", quote_currency=quote, rate=Decimal(rate))
    catalog = grow_catalog(total=args.products, matching=int(args.products * 0.6))
    add_promotions(ops)
    # The recharged product: an operator without promotions, so recharges are dispatched at
    # once (a scheduled promotion would waitlist them).
    product = Product.objects.filter(operator=ops[COUNTRY][2]).order_by("pk").first()
    many = [
        key_for(b2b_user(f"bench-many-{n}@reseller.example"), "bench") for n in range(args.clients)
    ]
    hot_user = b2b_user("bench-hot@reseller.example")
    hot = [key_for(hot_user, f"bench-{n}") for n in range(args.clients)]
    balance_user = user_create(email=BALANCE_EMAIL, password=None, is_b2b=True)
    for _ in range(100):  # 100 ledger entries
        wallet_topup_manual(account=balance_user.account, amount=Decimal("1.00"), note="bench")
    return {
        "catalog": catalog,
        "product_id": product.public_id,
        "recipient": RECIPIENT,
        "country": COUNTRY,
        "many_keys": many,
        "hot_keys": hot,
        "balance_key": key_for(balance_user, "bench"),
        "balance_entries": entries_of(BALANCE_EMAIL),
    }


def cmd_webhooks(args) -> dict:
    """B2B accounts whose live webhook endpoint (at ``--url``) wants every event."""
    from webhooks.services import endpoint_create

    keys = []
    for n in range(args.clients):
        user = b2b_user(f"bench-hooked-{n}@reseller.example")
        endpoint_create(account=user.account, url=args.url, livemode=True, user=user)
        keys.append(key_for(user, "bench"))
    return {"keys": keys}


def cmd_accounts(args) -> dict:
    """Fresh funded B2B accounts with a live key each, for a figure whose accounts must carry
    nothing an earlier figure left queued (the fairness figure: a lane counts its account's
    published, unclaimed recharges, and the earlier figures purge theirs from the broker)."""
    accounts = []
    for n in range(args.count):
        user = b2b_user(f"bench-{args.prefix}-{n}@reseller.example")
        accounts.append({"key": key_for(user, "bench"), "account": user.account.pk})
    return {"accounts": accounts}


def cmd_network(args) -> dict:
    """Issue 42's figure: ``--clients`` three-level networks (top -> agent -> agent's agent),
    each level priced 5 % over its parent by a price list on MX, every wallet funded, a
    live key of each top account and of each agent at level 3."""
    from accounts.team import invitation_accept
    from emails.models import Email
    from network.agents import agent_create
    from network.price_lists import RuleSpec, price_list_create

    tops, deepest = [], []
    for n in range(args.clients):
        top = b2b_user(f"bench-net-{n}@reseller.example")
        parent, by = top.account, top
        for level in (2, 3):
            with transaction.atomic():
                listed = price_list_create(
                    owner=parent,
                    name="bench",
                    rules=[RuleSpec(markup_percent=Decimal(5), country=COUNTRY)],
                )
                agent = agent_create(
                    parent=parent,
                    by=by,
                    name=f"bench net {n} level {level}",
                    owner_email=f"bench-net-{n}-{level}@reseller.example",
                    price_list_id=listed.public_id,
                )
            wallet_topup_manual(account=agent, amount=WALLET_FUNDS, note="bench")
            # Its owner follows the invitation's link, as a person would (the outbox still
            # holds the link: nothing sends the bench's emails).
            email = f"bench-net-{n}-{level}@reseller.example"
            path = Email.objects.filter(to=email).latest("id").context["accept_path"]
            token = path.rstrip("/").rsplit("/", 1)[-1]
            owner = invitation_accept(token=token, password=secrets.token_urlsafe(16))
            assert owner is not None, email
            parent, by = agent, owner
        tops.append(key_for(top, "bench"))
        deepest.append(key_for(by, "bench"))
    return {"top_keys": tops, "deep_keys": deepest}


def entries_of(email: str) -> int:
    return Wallet.objects.get(account__users__email=email, kind="live").entries.count()


def cmd_catalog(args) -> dict:
    return grow_catalog(total=args.total, matching=args.total // 10)


def cmd_ledger(args) -> dict:
    """Bulk-insert adjustment entries of 0.01 into the balance wallet with one INSERT … SELECT,
    and raise the cached balance by their sum in the same transaction (check_ledger stays clean).
    """
    wallet = Wallet.objects.get(account__users__email=BALANCE_EMAIL, kind="live")
    missing = args.entries - wallet.entries.count()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT balance FROM wallet_wallet WHERE id = %s FOR UPDATE", [wallet.pk])
        (balance,) = cursor.fetchone()
        cursor.execute(
            """
            INSERT INTO wallet_ledgerentry
                (public_id, wallet_id, kind, amount, balance_after, currency, reference, memo,
                 created_at)
            SELECT 'txn_bench' || n, %s, 'adjustment', 0.01, %s + n * 0.01, %s,
                   'bench-' || n, 'bench bulk entry', now()
            FROM generate_series(1, %s) AS n
            """,
            [wallet.pk, balance, wallet.currency, missing],
        )
        cursor.execute(
            "UPDATE wallet_wallet SET balance = balance + %s * 0.01 WHERE id = %s",
            [missing, wallet.pk],
        )
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE wallet_ledgerentry")
        # Flush the million new rows now, so the checkpointer's writes do not land inside
        # the measured window of the read that follows (it is what made that figure noisy).
        cursor.execute("CHECKPOINT")
    return {"entries": entries_of(BALANCE_EMAIL)}


def cmd_queued(args) -> dict:
    ids = Recharge.objects.filter(status="queued").order_by("pk").values_list("pk", flat=True)
    if args.product:
        ids = ids.filter(product__public_id=args.product)
    return {"ids": list(ids[: args.limit])}


def cmd_status(_args) -> dict:
    statuses = dict(
        Recharge.objects.values_list("status").annotate(n=Count("pk")).values_list("status", "n")
    )
    return {"recharges": statuses, "ledger_mismatches": len(ledger_mismatches())}


def cmd_deliveries(_args) -> dict:
    """Webhook deliveries by state: did the delivery worker keep up with the events?"""
    from webhooks.models import Delivery

    states = dict(Delivery.objects.values_list("state").annotate(n=Count("pk")))
    return {"deliveries": states}


def cmd_routing_operators(_args) -> dict:
    """The catalog operators the three fake providers' Mexican catalogs map to (by name, as
    tests/test_routing_fakes.py creates them); their products come from the sync."""
    country, _ = services.country_upsert(
        code="MX", name="Mexico", calling_code="+52", currency="MXN"
    )
    for slug, name, carriers in (("telcel", "Telcel", ["Telcel"]), ("att", "AT&T", ["AT&T"])):
        with transaction.atomic():
            services.operator_upsert(country=country, slug=slug, name=name, carrier_names=carriers)
    return {"operators": ["telcel", "att"]}


def cmd_routes(args) -> dict:
    """Products with an active route at ``--providers`` providers or more (2): each with its
    usable routes cheapest first (the order the processor tries them in while every provider
    is healthy)."""
    from upstreams.models import Route
    from upstreams.routing import routes_ranked

    product_ids = (
        Route.objects.filter(active=True)
        .values("product_id")
        .annotate(n=Count("provider", distinct=True))
        .filter(n__gte=args.providers)
        .values_list("product_id", flat=True)
    )
    products = []
    for product in Product.objects.filter(pk__in=list(product_ids)).select_related("operator"):
        # A range product's routes ranked at its smallest amount (contract section 17).
        ranked = routes_ranked(product=product, amount=product.range_min)
        products.append(
            {
                "id": product.public_id,
                "name": product.name,
                "operator": product.operator.slug,
                "denomination": product.denomination,
                "local_amount": str(product.local_amount or 0),
                "routes": [
                    {"provider": r.provider.name, "cost": str(r.cost), "currency": r.cost_currency}
                    for r in ranked
                ],
            }
        )
    return {"products": sorted(products, key=lambda p: (p["operator"], float(p["local_amount"])))}


def main() -> int:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    init = sub.add_parser("init")
    init.add_argument("--clients", type=int, default=32)
    init.add_argument("--products", type=int, default=100)
    sub.add_parser("catalog").add_argument("--total", type=int, default=10_000)
    sub.add_parser("ledger").add_argument("--entries", type=int, default=1_000_000)
    queued = sub.add_parser("queued")
    queued.add_argument("--limit", type=int, default=500)
    queued.add_argument("--product", default="")
    sub.add_parser("status")
    sub.add_parser("deliveries")
    sub.add_parser("routing-operators")
    sub.add_parser("routes").add_argument("--providers", type=int, default=2)
    fresh = sub.add_parser("accounts")
    fresh.add_argument("--prefix", required=True)
    fresh.add_argument("--count", type=int, default=5)
    sub.add_parser("network").add_argument("--clients", type=int, default=8)
    hooks = sub.add_parser("webhooks")
    hooks.add_argument("--clients", type=int, default=8)
    hooks.add_argument("--url", required=True)
    args = parser.parse_args()
    handler = {
        "init": cmd_init,
        "catalog": cmd_catalog,
        "ledger": cmd_ledger,
        "queued": cmd_queued,
        "deliveries": cmd_deliveries,
        "status": cmd_status,
        "webhooks": cmd_webhooks,
        "routing-operators": cmd_routing_operators,
        "routes": cmd_routes,
        "accounts": cmd_accounts,
        "network": cmd_network,
    }[args.command]
    print(json.dumps(handler(args)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
