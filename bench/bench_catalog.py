#!/usr/bin/env python
"""Benchmark: listing 50 recharge products of one country out of 100 vs out of 10,000.

The catalog listing must cost about the same whatever the size of the catalog: the page is
read through a partial index in catalog order and its promotions in two more queries.

Run on PostgreSQL (not part of pytest):

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/reseller .venv/bin/python bench/bench_catalog.py

It works in a throwaway database (``<name>_bench``, created and dropped here), sends the
same authenticated request through Django's in-process test client a bounded number of
times per catalog size, prints a table (p50/p99 in ms and their ratio) and writes
``bench/results/catalog.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reseller.settings.test")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from rest_framework.test import APIClient  # noqa: E402
from rest_framework_simplejwt.tokens import RefreshToken  # noqa: E402

from accounts.services import user_create  # noqa: E402
from catalog import services  # noqa: E402
from catalog.ids import product_public_id  # noqa: E402
from catalog.models import Operator, Product  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "catalog.json"
COUNTRY = "MX"
PAGE = 50
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


def make_operators() -> dict[str, list[Operator]]:
    operators: dict[str, list[Operator]] = {}
    for code, name, calling, currency in COUNTRIES:
        country, _ = services.country_upsert(
            code=code, name=name, calling_code=calling, currency=currency
        )
        operators[code] = [
            services.operator_upsert(country=country, slug=f"op{n}", name=f"{name} {n}")[0]
            for n in range(3)
        ]
    return operators


def add_products(operators: dict[str, list[Operator]], *, country: str, count: int) -> None:
    start = Product.objects.filter(country_id=country).count()
    batch = []
    for n in range(start, start + count):
        operator = operators[country][n % len(operators[country])]
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


def grow_to(operators, *, total: int, matching: int) -> None:
    """Add products until the catalog has ``total``, ``matching`` of them in COUNTRY."""
    add_products(operators, country=COUNTRY, count=matching - count_in(COUNTRY))
    others = [code for code, *_ in COUNTRIES if code != COUNTRY]
    missing = total - Product.objects.count()
    for index, code in enumerate(others):
        share = missing // len(others) + (1 if index < missing % len(others) else 0)
        add_products(operators, country=code, count=share)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE catalog_product")


def count_in(country: str) -> int:
    return Product.objects.filter(country_id=country).count()


def add_promotions(operators) -> None:
    now = datetime.now(UTC)
    mx = operators[COUNTRY]
    services.promotion_upsert(
        code="bench-wide",
        operator=mx[0],
        name="Operator-wide",
        description="Double airtime.",
        starts_at=now - timedelta(days=1),
        ends_at=now + timedelta(days=30),
    )
    services.promotion_upsert(
        code="bench-products",
        operator=mx[1],
        products=list(Product.objects.filter(operator=mx[1]).order_by("pk")[:10]),
        name="On ten products",
        description="Triple data.",
        starts_at=now + timedelta(hours=24),
        ends_at=now + timedelta(days=3),
    )


def measure(client: APIClient, *, requests: int, warmup: int) -> dict:
    url = f"/api/v1/catalog/recharge-products?country={COUNTRY}&limit={PAGE}"
    for _ in range(warmup):
        assert client.get(url).status_code == 200
    queries: list[tuple[str, tuple]] = []

    def count(execute, sql, params, many, context):
        queries.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count):
        body = client.get(url).json()
    assert len(body["results"]) == PAGE, body
    timings = []
    for _ in range(requests):
        started = time.perf_counter()
        response = client.get(url)
        timings.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200
    page_sql, page_params = next((q for q in queries if f"LIMIT {PAGE}" in q[0]), queries[0])
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {page_sql}", page_params)
        plan = [row[0] for row in cursor.fetchall()]
    return {
        "products": Product.objects.count(),
        "matching": body["count"],
        "returned": len(body["results"]),
        "queries": len(queries),
        "requests": requests,
        "p50_ms": round(statistics.median(timings), 2),
        "p99_ms": round(statistics.quantiles(timings, n=100)[98], 2),
        "mean_ms": round(statistics.fmean(timings), 2),
        "page_query_plan": plan,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300, help="measured requests per size")
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--small", type=int, default=100)
    parser.add_argument("--large", type=int, default=10_000)
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument(
        "--keep-db", action="store_true", help="keep the <name>_bench database to inspect it"
    )
    args = parser.parse_args()
    args.requests = max(10, min(args.requests, 5000))  # bounded

    database = settings.DATABASES["default"]
    if database["ENGINE"] != "django.db.backends.postgresql":
        print("warning: this benchmark is meant for PostgreSQL (set DATABASE_URL)", file=sys.stderr)
    database.setdefault("TEST", {})["NAME"] = f"{database['NAME']}_bench"
    creation = connection.creation
    name = creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    try:
        operators = make_operators()
        user = user_create(email="bench@reseller.example", password=None)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {RefreshToken.for_user(user).access_token}")

        grow_to(operators, total=args.small, matching=int(args.small * 0.6))
        add_promotions(operators)
        small = measure(client, requests=args.requests, warmup=args.warmup)
        grow_to(operators, total=args.large, matching=args.large // 10)
        large = measure(client, requests=args.requests, warmup=args.warmup)
        with connection.cursor() as cursor:
            cursor.execute("SHOW server_version")
            server = cursor.fetchone()[0]
    finally:
        if args.keep_db:
            print(f"kept database {name}", file=sys.stderr)
        else:
            creation.destroy_test_db(name, verbosity=0)

    result = {
        "benchmark": "catalog: list 50 products of one country (GET /api/v1/catalog/"
        f"recharge-products?country={COUNTRY}&limit={PAGE})",
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "database": f"PostgreSQL {server}",
        "python": platform.python_version(),
        "django": django.get_version(),
        "client": "Django test client, in process, JWT Bearer authentication",
        "scenarios": [small, large],
        "ratio_p50": round(large["p50_ms"] / small["p50_ms"], 2),
        "ratio_p99": round(large["p99_ms"] / small["p99_ms"], 2),
    }
    print(f"\n{result['benchmark']}\n")
    header = f"{'products':>9} {'matching':>9} {'queries':>8} {'p50 ms':>8} {'p99 ms':>8}"
    print(header)
    print("-" * len(header))
    for row in (small, large):
        print(
            f"{row['products']:>9} {row['matching']:>9} {row['queries']:>8} "
            f"{row['p50_ms']:>8.2f} {row['p99_ms']:>8.2f}"
        )
    print(
        f"\nratio {args.large} / {args.small}: p50 x{result['ratio_p50']}, "
        f"p99 x{result['ratio_p99']}"
    )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    shown = args.output.relative_to(ROOT) if args.output.is_relative_to(ROOT) else args.output
    print(f"written to {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
