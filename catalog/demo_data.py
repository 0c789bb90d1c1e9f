"""The demo catalog of ``seed_demo``: real countries, their operators, face values, promotions.

Data only; ``catalog.demo`` loads it. Face values are those top-up providers sell; EUR prices
are computed from ``PRICING_RATES`` (approximate, for the demo only) with ``MARGIN``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

STAFF_EMAIL = "admin@reseller.example"
STAFF_PASSWORD = "demo-admin-pass-2026"
RESELLER_EMAIL = "reseller@reseller.example"
RESELLER_PASSWORD = "demo-reseller-pass-2026"
RESELLER_ACCOUNT = "Demo Reseller Ltd"

# What our FX table says (1 EUR = rate). Quotes may convert to these currencies.
FX_RATES = {"USD": Decimal("1.0850"), "GBP": Decimal("0.8450")}

# Approximate EUR → local rates used only to price the demo products.
PRICING_RATES = {
    "USD": Decimal("1.085"),
    "MXN": Decimal("21.0"),
    "NGN": Decimal("1700"),
    "INR": Decimal("94"),
    "PHP": Decimal("63"),
    "COP": Decimal("4500"),
    "DOP": Decimal("67"),
    "GHS": Decimal("16.5"),
    "HTG": Decimal("142"),
    "KES": Decimal("140"),
    "JMD": Decimal("170"),
}
MARGIN = Decimal("1.10")
MINIMUM_PRICE = Decimal("0.10")

COUNTRIES = [
    # code, English name, es, fr, calling code, currency
    ("CU", "Cuba", "Cuba", "Cuba", "+53", "CUP"),
    ("MX", "Mexico", "México", "Mexique", "+52", "MXN"),
    ("NG", "Nigeria", "Nigeria", "Nigeria", "+234", "NGN"),
    ("IN", "India", "India", "Inde", "+91", "INR"),
    ("PH", "Philippines", "Filipinas", "Philippines", "+63", "PHP"),
    ("CO", "Colombia", "Colombia", "Colombie", "+57", "COP"),
    ("DO", "Dominican Republic", "República Dominicana", "République dominicaine", "+1", "DOP"),
    ("GH", "Ghana", "Ghana", "Ghana", "+233", "GHS"),
    ("HT", "Haiti", "Haití", "Haïti", "+509", "HTG"),
    ("KE", "Kenya", "Kenia", "Kenya", "+254", "KES"),
    ("JM", "Jamaica", "Jamaica", "Jamaïque", "+1", "JMD"),
]


@dataclass(frozen=True)
class DemoOperator:
    country: str
    slug: str
    name: str
    color: str
    carrier_names: tuple[str, ...]
    airtime: tuple[int, ...]  # face values in the product currency
    data: tuple[tuple[int, str, int], ...] = ()  # (face value, allowance, validity days)
    currency: str | None = None  # the product currency when not the country's
    prefixes: tuple[str, ...] = field(default=())
    # A range product (contract section 17): any amount from, to, in steps of.
    any_amount: tuple[int, int, int] | None = None
    # Bundles (contract section 17, "Kinds"): (face value, benefits as (kind, amount, unit),
    # validity days).
    bundles: tuple[tuple[int, tuple[tuple[str, str, str], ...], int], ...] = ()
    # PINs: face values of codes the customer enters (credit of that amount), and their
    # validity in days.
    pins: tuple[int, ...] = ()
    pin_validity_days: int | None = None


OPERATORS = [
    DemoOperator(
        "CU", "cubacel", "Cubacel", "#0066b3", ("etecsa", "Cubacel"),
        (10, 15, 20, 25, 30, 40, 50), ((20, "6.5 GB", 30), (35, "14 GB", 30)), currency="USD",
    ),
    DemoOperator(
        "MX", "telcel", "Telcel", "#0f3c96", ("Telcel",),
        (20, 30, 50, 100, 150, 200, 300, 500), ((50, "1.5 GB", 7), (200, "6 GB", 30)),
        any_amount=(20, 1000, 10),
        bundles=((150, (("data", "5", "GB"), ("voice", "100", "min"), ("sms", "50", "SMS")), 30),),
        pins=(100,),
        pin_validity_days=180,
    ),
    DemoOperator(
        "MX", "att", "AT&T", "#009fdb", ("AT&T", "Iusacell", "Nextel"),
        (20, 50, 100, 150, 200, 300, 500), ((100, "3 GB", 15),),
    ),
    DemoOperator(
        "MX", "movistar", "Movistar", "#019df4", ("Movistar",),
        (20, 30, 50, 100, 150, 200), ((100, "4 GB", 30),),
    ),
    DemoOperator(
        "NG", "mtn", "MTN", "#ffcb05", ("MTN",),
        (100, 200, 500, 1000, 2000, 5000), ((1000, "1.5 GB", 30), (3500, "10 GB", 30)),
    ),
    DemoOperator(
        "NG", "airtel", "Airtel", "#e40000", ("Airtel",),
        (100, 200, 500, 1000, 2000, 5000), ((1000, "1.5 GB", 30),),
    ),
    DemoOperator(
        "NG", "glo", "Glo", "#50b848", ("Glo",),
        (100, 200, 500, 1000, 2000), ((1000, "2.5 GB", 30),),
    ),
    DemoOperator(
        "NG", "9mobile", "9mobile", "#006f3c", ("9mobile", "Etisalat"), (100, 200, 500, 1000)
    ),
    DemoOperator(
        "IN", "airtel", "Airtel", "#e40000", ("Airtel",),
        (10, 20, 50, 100, 500), ((299, "1.5 GB/day", 28), (719, "1.5 GB/day", 84)),
    ),
    DemoOperator(
        "IN", "jio", "Jio", "#0a2885", ("Reliance Jio", "Jio"),
        (10, 20, 50, 100, 500), ((299, "1.5 GB/day", 28), (749, "2 GB/day", 72)),
    ),
    DemoOperator(
        "IN", "vi", "Vi", "#ee2737", ("Vodafone", "Idea", "Vi"),
        (10, 20, 50, 100), ((299, "1 GB/day", 28),),
    ),
    DemoOperator("IN", "bsnl", "BSNL", "#f26522", ("BSNL MOBILE", "BSNL"), (10, 20, 50, 100)),
    DemoOperator(
        "PH", "globe", "Globe", "#0056a3", ("Globe",),
        (10, 15, 20, 30, 50, 100, 300, 500), ((99, "8 GB", 7),),
    ),
    DemoOperator(
        "PH", "smart", "Smart", "#00a14b", ("Smart",),
        (10, 15, 20, 30, 50, 100, 300, 500), ((99, "7 GB", 7),),
    ),
    DemoOperator("PH", "dito", "DITO", "#e4002b", ("Dito",), (50, 100, 200, 300)),
    DemoOperator(
        "CO", "claro", "Claro", "#da291c", ("Claro",),
        (2000, 5000, 10000, 20000, 50000), ((15000, "4 GB", 15),),
        prefixes=("310", "311", "312", "313", "314", "320", "321", "322", "323"),
    ),
    DemoOperator(
        "CO", "movistar", "Movistar", "#019df4", ("Movistar",),
        (2000, 5000, 10000, 20000, 50000), (),
        prefixes=("315", "316", "317", "318", "319"),
    ),
    DemoOperator(
        "CO", "tigo", "Tigo", "#00377b", ("Tigo",),
        (2000, 5000, 10000, 20000, 50000), ((12000, "3 GB", 15),),
        prefixes=("300", "301", "302", "304", "305"),
    ),
    DemoOperator(
        "DO", "claro", "Claro", "#da291c", ("Claro",),
        (50, 100, 200, 300, 500, 1000), ((300, "3 GB", 7),),
    ),
    DemoOperator(
        "DO", "altice", "Altice", "#1d1d1b", ("Altice", "Orange", "Tricom"),
        (50, 100, 200, 300, 500, 1000), ((350, "4 GB", 7),),
    ),
    DemoOperator("DO", "viva", "Viva", "#ed1c91", ("Viva",), (50, 100, 200, 500)),
    DemoOperator(
        "GH", "mtn", "MTN", "#ffcb05", ("MTN",), (2, 5, 10, 20, 50), ((20, "5.5 GB", 30),)
    ),
    DemoOperator(
        "GH", "telecel", "Telecel", "#e60000", ("Telecel", "Vodafone"),
        (2, 5, 10, 20, 50), ((20, "5 GB", 30),),
    ),
    DemoOperator("GH", "at", "AT", "#2b2a7c", ("at", "AirtelTigo"), (2, 5, 10, 20)),
    DemoOperator(
        "HT", "digicel", "Digicel", "#e2001a", ("Digicel",),
        (50, 100, 250, 500, 1000), ((500, "5 GB", 30),),
    ),
    DemoOperator("HT", "natcom", "Natcom", "#f7941d", ("Natcom",), (50, 100, 250, 500, 1000)),
    DemoOperator(
        "KE", "safaricom", "Safaricom", "#4cb050", ("Safaricom",),
        (20, 50, 100, 250, 500, 1000), ((250, "2.5 GB", 7),),
    ),
    DemoOperator("KE", "airtel", "Airtel", "#e40000", ("Airtel",), (20, 50, 100, 250, 500, 1000)),
    DemoOperator("KE", "telkom", "Telkom", "#00a3e0", ("Telkom",), (20, 50, 100, 250)),
    DemoOperator(
        "JM", "digicel", "Digicel", "#e2001a", ("Digicel",),
        (100, 200, 500, 1000, 2000), ((1000, "8 GB", 7),),
    ),
    DemoOperator(
        "JM", "flow", "Flow", "#1e2c6b", ("Cable & Wireless", "C&W", "Flow"),
        (100, 200, 500, 1000, 2000),
    ),
]  # fmt: skip


@dataclass(frozen=True)
class DemoPromotion:
    code: str
    country: str
    operator: str
    skus: tuple[str, ...]  # empty: every product of the operator
    kind: str  # what the demo shows: "active", "scheduled" or "ended"
    name: str
    description: str
    terms: str
    translations: dict


PROMOTIONS = [
    DemoPromotion(
        code="demo-cubacel-bonus",
        country="CU",
        operator="cubacel",
        skus=(),
        kind="active",
        name="Cubacel bonus: double balance",
        description="Every Cubacel top-up gets the same amount again as bonus balance, "
        "plus unlimited data from midnight to 7 am.",
        terms="Bonus balance valid 30 days for calls and SMS within Cuba. One bonus per "
        "recipient per day. Applied by ETECSA to the recipient's line.",
        translations={
            "es": {
                "name": "Bono Cubacel: saldo doble",
                "description": "Cada recarga Cubacel recibe el mismo importe como saldo de "
                "bono, más datos ilimitados de medianoche a las 7 h.",
                "terms": "Saldo de bono válido 30 días para llamadas y SMS en Cuba. Un bono "
                "por destinatario y día. ETECSA lo aplica a la línea del destinatario.",
            },
            "fr": {
                "name": "Bonus Cubacel : crédit doublé",
                "description": "Chaque recharge Cubacel reçoit le même montant en crédit "
                "bonus, plus les données illimitées de minuit à 7 h.",
                "terms": "Crédit bonus valable 30 jours pour les appels et SMS à Cuba. Un "
                "bonus par destinataire et par jour. Appliqué par ETECSA à la ligne.",
            },
        },
    ),
    DemoPromotion(
        code="demo-telcel-triple",
        country="MX",
        operator="telcel",
        skus=("DEMO-MX-TELCEL-AIR-100", "DEMO-MX-TELCEL-AIR-200", "DEMO-MX-TELCEL-AIR-500"),
        kind="scheduled",
        name="Telcel weekend: triple data",
        description="Telcel top-ups of 100 MXN and more bring three times the usual data "
        "allowance over the weekend.",
        terms="For recharges delivered during the promotion window. Data valid 7 days.",
        translations={
            "es": {
                "name": "Fin de semana Telcel: datos triples",
                "description": "Las recargas Telcel de 100 MXN o más traen el triple de "
                "datos durante el fin de semana.",
                "terms": "Para recargas entregadas durante la promoción. Datos válidos 7 días.",
            },
            "fr": {
                "name": "Week-end Telcel : données triplées",
                "description": "Les recharges Telcel de 100 MXN et plus apportent trois fois "
                "plus de données pendant le week-end.",
                "terms": "Pour les recharges livrées pendant la promotion. Données valables "
                "7 jours.",
            },
        },
    ),
    DemoPromotion(
        code="demo-claro-do-summer",
        country="DO",
        operator="claro",
        skus=(),
        kind="ended",
        name="Claro summer bonus",
        description="50% extra balance on every Claro top-up.",
        terms="Ended.",
        translations={},
    ),
]
