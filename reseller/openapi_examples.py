"""The examples of the OpenAPI schema, built from one story so that they agree with each other.

Ana's shop, a B2B reseller with a EUR wallet, tops up a Telcel Mexico number (+52 55 1234 5601)
with "Telcel 100 MXN" (5.10 EUR). The ids, amounts and times below are those of that order, as
the API renders them (camelCase, money as strings with two decimals, RFC 3339 UTC times), so a
request example answers with the response example beside it. Each builder takes keyword
overrides for the variant an operation shows (a failed recharge, a waitlisted one…).

Error examples come from ``reseller.problem_types`` (one per code of each documented status),
webhook bodies from the same builders (``orders.webhook_schema``). tests/test_api_docs.py
checks every operation has them and that each example matches its schema.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample

from reseller.problem_types import PROBLEM_TYPES, problem_type

PROBLEM_JSON = "application/problem+json"

# -- the story's values ------------------------------------------------------------------------
USER_ID = "usr_Q7mX2pL9vK4sN8rT1wYc"
ACCOUNT_ID = "acc_B3nV6hJ0cR5tM9qW2xZe"
COUNTRY = "MX"
OPERATOR = {"id": "opr_Vj1NAMsVck11tvLxmHNI", "name": "Telcel"}
PRODUCT_ID = "prd_UiTumpNZHwpfLSyGJMAy"
PRODUCT_NAME = "Telcel 100 MXN"
PHONE = "+525512345601"
PHONE_2 = "+525512345602"
ORDER_ID = "ord_xNZ1o6Y7JRlhcFCqdvmx"
PAYMENT_ID = "pay_cNYlF0bgRil0QeX9cdWt"
RECHARGE_ID = "rch_Fbc5u7rtDcsPEiCUFuat"
RECHARGE_ID_2 = "rch_XMLPz3TcouCFry9TxSMy"
BATCH_ID = "bat_2DFbDlqzSsDiRcVkJ1Js"
TOPUP_ID = "top_uxobTzaQBnExeoTLMCUg"
ITEM_ID = "itm_1qN3hUwOmCDCZoQZPNiz"
REQUEST_ID = "req_93a1e30449134d7da45c101dbceb1464"
PRICE = "5.10"
CURRENCY = "EUR"
LOCAL_AMOUNT = "100.00"
LOCAL_CURRENCY = "MXN"
AT = "2026-11-24T09:30:11Z"
LATER = "2026-11-24T09:30:13Z"
IDEMPOTENCY_KEY = "order-2026-11-24-0001"
API = "https://reseller.example/api/v1"
# Card flow (Stripe test mode): the publishable key and a SetupIntent's client secret.
PUBLISHABLE_KEY = "pk_test_51Q2w3E4r5T6y7U8i9O0pAsDfGhJkL"
SETUP_SECRET = "seti_1Q9zXvLkdIwHu7ix0aB3cD4e_secret_RfTgYhUjIkOlP"
PAYMENT_SECRET = "pi_3Q9zXvLkdIwHu7ix1fG5hJ6k_secret_QwErTyUiOpAsD"


def _with(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    return {**base, **over}


# -- request bodies ------------------------------------------------------------------------------
def line(**over: Any) -> dict[str, Any]:
    """An order line (``items[]``) of wallet checkout, B2B recharges, quotes and batches."""
    return _with({"productId": PRODUCT_ID, "recipientNumber": PHONE, "quantity": 1}, over)


def order_request(**over: Any) -> dict[str, Any]:
    """The order request envelope (interface-spec section 2)."""
    return _with({"items": [line()], "baseCurrency": CURRENCY}, over)


# -- resources -----------------------------------------------------------------------------------
def recharge(**over: Any) -> dict[str, Any]:
    """A recharge as an order or a payment lists it."""
    return _with(
        {
            "id": RECHARGE_ID,
            "productId": PRODUCT_ID,
            "recipientNumber": PHONE,
            "localAmount": LOCAL_AMOUNT,
            "localCurrency": LOCAL_CURRENCY,
            "amount": PRICE,
            "currency": CURRENCY,
            "status": "queued",
            "failureCode": None,
            "failureMessage": None,
            "createdAt": AT,
            "updatedAt": AT,
            "livemode": True,
            "fields": {},
            "pin": None,  # a PIN product's code once delivered, for its buyer only
        },
        over,
    )


def recharge_detail(**over: Any) -> dict[str, Any]:
    """A recharge as the lookup (and the recharge.* webhooks) show it: delivered."""
    return _with(
        recharge(status="delivered", updatedAt=LATER)
        | {
            "orderId": ORDER_ID,
            "paymentId": PAYMENT_ID,
            "operatorReference": "TLC-884213907",
            "deliveredAmount": LOCAL_AMOUNT,
            "deliveredCurrency": LOCAL_CURRENCY,
            "events": [
                {"status": "queued", "previousStatus": None, "at": AT, "note": "order placed"},
                {"status": "dispatched", "previousStatus": "queued", "at": AT, "note": ""},
                {
                    "status": "delivered",
                    "previousStatus": "dispatched",
                    "at": LATER,
                    "note": "TLC-884213907",
                },
            ],
        },
        over,
    )


def recharge_failed(**over: Any) -> dict[str, Any]:
    return recharge_detail(
        status="failed",
        failureCode="invalid_recipient",
        failureMessage="The recipient number cannot receive top-ups.",
        operatorReference=None,
        deliveredAmount=None,
        deliveredCurrency=None,
        events=[
            {"status": "queued", "previousStatus": None, "at": AT, "note": "order placed"},
            {"status": "dispatched", "previousStatus": "queued", "at": AT, "note": ""},
            {
                "status": "failed",
                "previousStatus": "dispatched",
                "at": LATER,
                "note": "invalid_recipient",
            },
        ],
        **over,
    )


def payment(**over: Any) -> dict[str, Any]:
    return _with(
        {
            "id": PAYMENT_ID,
            "orderId": ORDER_ID,
            "status": "captured",
            "method": "wallet",
            "amount": PRICE,
            "refundedAmount": "0.00",
            "currency": CURRENCY,
            "livemode": True,
            "createdAt": AT,
            "recharges": [recharge()],
            "dispute": None,
        },
        over,
    )


def order(**over: Any) -> dict[str, Any]:
    """The 201 of wallet checkout and B2B recharges: the order, its payment, its recharges."""
    return _with(
        {
            "id": ORDER_ID,
            "payment": payment(),
            "lines": [
                {
                    "productId": PRODUCT_ID,
                    "recipientNumber": PHONE,
                    "quantity": 1,
                    "localAmount": LOCAL_AMOUNT,
                    "localCurrency": LOCAL_CURRENCY,
                    "unitPrice": PRICE,
                    "lineTotal": PRICE,
                }
            ],
            "recharges": [recharge()],
            "total": PRICE,
            "currency": CURRENCY,
            "livemode": True,
            "whenPromotionScheduled": "wait",
            "createdAt": AT,
        },
        over,
    )


def product(**over: Any) -> dict[str, Any]:
    return _with(
        {
            "id": PRODUCT_ID,
            "name": PRODUCT_NAME,
            "description": "100 MXN of airtime",
            "type": "airtime",
            "operator": OPERATOR,
            "country": COUNTRY,
            "denomination": "fixed",
            "localAmount": LOCAL_AMOUNT,
            "localCurrency": LOCAL_CURRENCY,
            "price": PRICE,
            "currency": CURRENCY,
            "range": None,
            "pricing": None,
            "requiredFields": [],
            "validity": None,
            "validityDays": None,
            "benefits": [],
            "promotion": None,
        },
        over,
    )


def bundle_product(**over: Any) -> dict[str, Any]:
    """A bundle (contract section 17, "Kinds"): what it gives, as its provider says."""
    return product(
        **{
            "id": "prd_Bn4TelcelBundle150x",
            "name": "Telcel bundle 150 MXN",
            "description": "5GB + 100 min + 50 SMS, 30 days",
            "type": "bundle",
            "localAmount": "150.00",
            "price": "7.65",
            "validity": "P30D",
            "validityDays": 30,
            "benefits": [
                {"kind": "data", "amount": "5", "unit": "GB", "text": "5GB"},
                {"kind": "voice", "amount": "100", "unit": "min", "text": "100 min"},
                {"kind": "sms", "amount": "50", "unit": "SMS", "text": "50 SMS"},
            ],
            **over,
        }
    )


def range_product(**over: Any) -> dict[str, Any]:
    """A range product (contract section 17): the buyer chooses the amount."""
    return product(
        **{
            "id": "prd_Rg7TelcelAnyAmount1",
            "name": "Telcel any amount",
            "description": "",
            "denomination": "range",
            "localAmount": None,
            "price": None,
            "range": {"min": "50.00", "max": "500.00", "step": "1.00", "currency": "MXN"},
            "pricing": {"rate": "22.11302211", "fee": "0.49", "currency": CURRENCY},
            **over,
        }
    )


def balance(**over: Any) -> dict[str, Any]:
    """The wallet's balance (``GET /wallet/balance``, the wallet.* webhooks' object)."""
    return _with({"available": "245.30", "currency": CURRENCY, "livemode": True}, over)


def batch(**over: Any) -> dict[str, Any]:
    return _with(
        {
            "id": BATCH_ID,
            "object": "batch",
            "status": "running",
            "orderId": ORDER_ID,
            "total": "10.20",
            "currency": CURRENCY,
            "livemode": True,
            "counts": {"queued": 1, "delivered": 1},
            "recharges": 2,
            "progress": 0.5,
            "createdAt": AT,
            "completedAt": None,
        },
        over,
    )


def user(**over: Any) -> dict[str, Any]:
    return _with(
        {
            "id": USER_ID,
            "email": "ana@tienda-ana.example",
            "firstName": "Ana",
            "lastName": "García",
            "phone": "+525598765432",
            "language": "es",
            "isStaff": False,
        },
        over,
    )


def me(**over: Any) -> dict[str, Any]:
    return _with(
        {
            "user": user(),
            "account": {
                "id": ACCOUNT_ID,
                "name": "Tienda Ana S.A. de C.V.",
                "isB2b": True,
                "walletCurrency": CURRENCY,
                "discountPercent": "2.50",
            },
            "billing": {
                "companyName": "Tienda Ana S.A. de C.V.",
                "vatNumber": "TAN201104AB1",
                "addressLine1": "Av. Insurgentes Sur 1602",
                "addressLine2": "Piso 4",
                "city": "Ciudad de México",
                "postalCode": "03940",
                "country": "MX",
            },
            "apiKey": {
                "name": "Shop backend",
                "prefix": "rsl_live_vgZC2oG9",
                "mode": "live",
                "ipWhitelist": ["203.0.113.10"],
                "createdAt": "2026-11-02T15:04:05Z",
                "lastUsedAt": AT,
            },
        },
        over,
    )


def page(*results: dict[str, Any]) -> dict[str, Any]:
    """A list envelope (decisions §1) holding these results, on one page."""
    return {
        "results": list(results),
        "count": len(results),
        "page": 1,
        "limit": 20,
        "next": None,
        "previous": None,
    }


# -- problems ------------------------------------------------------------------------------------
# A field error for the validation examples: what a malformed number answers.
PHONE_FIELD_ERROR = {
    "field": "items[0].recipientNumber",
    "code": "invalid_phone_number",
    "message": "Enter the number in international format: a plus sign, the country calling "
    "code and the number, e.g. +52 55 1234 5678.",
}


# What a line's refused localAmount answers (a range product of 10 to 500 MXN, contract §17).
AMOUNT_FIELD_ERROR = {
    "field": "items[0].localAmount",
    "code": "invalid_amount",
    "message": PROBLEM_TYPES["invalid_amount"].detail,
}


def problem_value(code: str, *, status: int | None = None, detail: str | None = None):
    """A problem+json body of ``code``, as the exception handler renders it (in English)."""
    problem = PROBLEM_TYPES[code]
    body: dict[str, Any] = {
        "type": problem_type(code),
        "title": str(problem.title),
        "status": status or problem.statuses[0],
        "code": code,
        "detail": detail or problem.detail,
    }
    if code == "validation_error":
        body["errors"] = [PHONE_FIELD_ERROR]
    elif code == "invalid_amount":
        body["errors"] = [AMOUNT_FIELD_ERROR]
    body["requestId"] = REQUEST_ID
    return body


def problem_examples(status: int, codes: tuple[str, ...]) -> list[OpenApiExample]:
    """One example of a ``status`` response per code."""
    return [
        OpenApiExample(
            code,
            value=problem_value(code, status=status),
            summary=code,
            description=str(PROBLEM_TYPES[code].when),
            response_only=True,
            status_codes=[status],
            media_type=PROBLEM_JSON,
        )
        for code in codes
    ]


# -- OpenApiExample helpers ----------------------------------------------------------------------
def request(name: str, value: Any, summary: str = "") -> OpenApiExample:
    return OpenApiExample(name, value=value, summary=summary or name, request_only=True)


def response(name: str, value: Any, status: int = 200, summary: str = "") -> OpenApiExample:
    return OpenApiExample(
        name, value=value, summary=summary or name, response_only=True, status_codes=[status]
    )


def exchange(
    name: str, request_value: Any, response_value: Any, *, status: int = 200
) -> list[OpenApiExample]:
    """A request example and the response it gets, under one name."""
    return [request(name, request_value), response(name, response_value, status=status)]


# -- per-operation values --------------------------------------------------------------------
# JWTs are long; these are shaped like ours (header.payload.signature) but sign nothing.
ACCESS_TOKEN = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ0b2tlbl90eXBlIjoiYWNjZXNzIn0.Zm9v"
REFRESH_TOKEN = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ0b2tlbl90eXBlIjoicmVmcmVzaCJ9.YmFy"
LOGIN_REQUEST = {"email": "ana@tienda-ana.example", "password": "correct horse battery staple"}
TOKENS = {"access": ACCESS_TOKEN, "refresh": REFRESH_TOKEN}
LOGIN = {**TOKENS, "user": user()}
ME_PATCH_REQUEST = {
    "user": {"firstName": "Ana", "language": "es"},
    "billing": {"city": "Ciudad de México", "postalCode": "03940"},
}
COUNTRY_MX = {
    "code": "MX",
    "name": "Mexico",
    "callingCode": "+52",
    "currency": "MXN",
    "flag": "🇲🇽",
}
OPERATOR_TELCEL = {
    "id": OPERATOR["id"],
    "name": "Telcel",
    "country": "MX",
    "color": "#0b3f94",
    "logoUrl": None,
    "detected": True,
    "detectedBy": "provider",
}
CART_ITEM_REQUEST = {"sessionId": "web-42", **line()}
CART_ITEM = {
    "id": ITEM_ID,
    "productId": PRODUCT_ID,
    "recipientNumber": PHONE,
    "quantity": 1,
    "localAmount": LOCAL_AMOUNT,
    "localCurrency": LOCAL_CURRENCY,
    "unitPrice": PRICE,
    "lineTotal": PRICE,
    "currency": CURRENCY,
    "livemode": True,
}
CART = {
    "sessionId": "web-42",
    "items": [CART_ITEM],
    "total": PRICE,
    "currency": CURRENCY,
    "livemode": True,
}
PAID = payment(recharges=[recharge(status="delivered", updatedAt=LATER)])
QUOTE_REQUEST = order_request(items=[line(quantity=2)])
QUOTE = {
    "lines": [
        {
            "productId": PRODUCT_ID,
            "recipientNumber": PHONE,
            "quantity": 2,
            "localAmount": LOCAL_AMOUNT,
            "localCurrency": LOCAL_CURRENCY,
            "unitPrice": PRICE,
            "lineTotal": "10.20",
            "promotion": None,
        }
    ],
    "total": "10.20",
    "currency": CURRENCY,
    "fxRate": None,
    "expiresAt": "2026-11-24T09:45:11Z",
    "livemode": True,
}
BATCH_REQUEST = order_request(
    items=[line(reference="invoice-1041"), line(recipientNumber=PHONE_2, reference="invoice-1042")]
)
BATCH_RESULTS_CSV = (
    "reference,recharge_id,recipient_number,product_id,status,amount,currency\r\n"
    f"invoice-1041,{RECHARGE_ID},{PHONE},{PRODUCT_ID},delivered,{PRICE},{CURRENCY}\r\n"
    f"invoice-1042,{RECHARGE_ID_2},{PHONE_2},{PRODUCT_ID},queued,{PRICE},{CURRENCY}\r\n"
)
SANDBOX = {
    "balance": "94.90",
    "currency": CURRENCY,
    "recharges": [recharge(status="processing", recipientNumber="+525512340003", livemode=False)],
}
PREPARE_REQUEST = order_request()
PREPARE = {
    "paymentId": PAYMENT_ID,
    "setupClientSecret": SETUP_SECRET,
    "publishableKey": PUBLISHABLE_KEY,
    "amount": PRICE,
    "currency": CURRENCY,
    "expiresAt": "2026-11-24T09:45:11Z",
    "livemode": True,
    "testMode": True,
}
TOPUP_PREPARE = {
    "topupId": TOPUP_ID,
    "setupClientSecret": SETUP_SECRET,
    "publishableKey": PUBLISHABLE_KEY,
    "amount": "200.00",
    "currency": CURRENCY,
    "expiresAt": "2026-11-24T09:45:11Z",
    "testMode": True,
}
TOPUP = {
    "id": TOPUP_ID,
    "status": "approved",
    "method": "card",
    "amount": "200.00",
    "currency": CURRENCY,
    "createdAt": AT,
}
STATEMENT = {
    "object": "statement",
    "from": "2026-11-01",
    "to": "2026-11-24",
    "currency": CURRENCY,
    "livemode": True,
    "openingBalance": "50.40",
    "credits": "200.00",
    "debits": "-5.10",
    "closingBalance": "245.30",
    "count": 2,
    "hasMore": False,
    "data": [
        {
            "createdAt": "2026-11-20T16:02:44Z",
            "kind": "topup",
            "reference": TOPUP_ID,
            "amount": "200.00",
            "currency": CURRENCY,
            "balanceAfter": "250.40",
            "memo": "card top-up",
            "entryId": "txn_jfV63TctiFUfyXUrI24D",
        },
        {
            "createdAt": AT,
            "kind": "payment",
            "reference": PAYMENT_ID,
            "amount": "-5.10",
            "currency": CURRENCY,
            "balanceAfter": "245.30",
            "memo": f"order {ORDER_ID}",
            "entryId": "txn_K2mW8qR4tY6uI0oP3aS5",
        },
    ],
}
REQUIRES_ACTION = {
    "status": "requires_action",
    "clientSecret": PAYMENT_SECRET,
    "paymentId": PAYMENT_ID,
}
# A guest's card checkout (the site's "Buy now" without an account, docs/site.md).
GUEST_RECEIPT_URL = f"/receipts/{PAYMENT_ID}:Xq3d9sJc0Kf2vB7mRt1Wn8yZ/"
GUEST_PREPARE_REQUEST = {"email": "luis@correo-luis.example", "whenPromotionScheduled": "wait"}
GUEST_PREPARE = {**PREPARE, "receiptUrl": GUEST_RECEIPT_URL}
GUEST_PAID = {"status": "succeeded", "paymentId": PAYMENT_ID, "receiptUrl": GUEST_RECEIPT_URL}
GUEST_REQUIRES_ACTION = {**REQUIRES_ACTION, "receiptUrl": GUEST_RECEIPT_URL}
# A card payment its buyer cancelled before paying it (its 3-D Secure never finished).
CANCELED = payment(method="card", status="canceled", recharges=[])
GUEST_CANCELED = {"status": "canceled", "paymentId": PAYMENT_ID, "receiptUrl": GUEST_RECEIPT_URL}
TOPUP_REQUIRES_ACTION = {
    "status": "requires_action",
    "clientSecret": PAYMENT_SECRET,
    "topupId": TOPUP_ID,
}
STATEMENT_CSV = (
    "created_at,kind,reference,amount,currency,balance_after,memo,entry_id\r\n"
    f"2026-11-20T16:02:44Z,topup,{TOPUP_ID},200.00,EUR,250.40,card top-up,"
    "txn_jfV63TctiFUfyXUrI24D\r\n"
)

# -- the back office ---------------------------------------------------------------------------
_ACCOUNT_REF = {"id": ACCOUNT_ID, "name": "Tienda Ana S.A. de C.V."}
_EUR = [{"currency": CURRENCY, "amount": "1284.60"}]
_WINDOW = {"count": 212, "totals": _EUR}
ADMIN_SUMMARY = {
    "generatedAt": AT,
    "users": {"total": 48, "active": 45, "staff": 2, "newLast30Days": 6},
    "accounts": {"total": 41, "b2b": 9},
    "apiKeys": {"active": 23, "live": 14, "test": 9},
    "payments": {
        "today": {
            "count": 31,
            "totals": [{"currency": CURRENCY, "amount": "158.10"}],
            "refunded": [{"currency": CURRENCY, "amount": "5.10"}],
        },
        "last7Days": {**_WINDOW, "refunded": [{"currency": CURRENCY, "amount": "15.30"}]},
        "last30Days": {
            "count": 903,
            "totals": [{"currency": CURRENCY, "amount": "5512.80"}],
            "refunded": [{"currency": CURRENCY, "amount": "40.80"}],
        },
    },
    "recharges": {
        "today": {"count": 33, "totals": [{"currency": CURRENCY, "amount": "168.30"}]},
        "last7Days": _WINDOW,
        "last30Days": {"count": 951, "totals": [{"currency": CURRENCY, "amount": "5806.35"}]},
    },
    "rechargesByStatus": {
        "queued": 2,
        "waitlisted": 5,
        "dispatched": 1,
        "delivered": 936,
        "failed": 7,
    },
    "successRate": 0.9926,
    "walletFloat": [{"currency": CURRENCY, "amount": "18342.75"}],
    "pendingBankTopups": {"count": 1, "totals": [{"currency": CURRENCY, "amount": "500.00"}]},
}
ADMIN_USER = {
    "id": USER_ID,
    "email": "ana@tienda-ana.example",
    "firstName": "Ana",
    "lastName": "García",
    "isStaff": False,
    "isActive": True,
    "dateJoined": "2026-11-02T15:01:12Z",
    "lastLogin": AT,
    "account": {**_ACCOUNT_REF, "isB2b": True, "discountPercent": "2.50", "walletCurrency": "EUR"},
    "activeKeys": 2,
    "wallet": {"currency": CURRENCY, "amount": "245.30"},
}
ADMIN_RECHARGE = {
    "id": RECHARGE_ID,
    "orderId": ORDER_ID,
    "paymentId": PAYMENT_ID,
    "account": _ACCOUNT_REF,
    "productId": PRODUCT_ID,
    "productName": PRODUCT_NAME,
    "operator": OPERATOR,
    "country": COUNTRY,
    "recipientNumber": PHONE,
    "localAmount": LOCAL_AMOUNT,
    "localCurrency": LOCAL_CURRENCY,
    "amount": PRICE,
    "currency": CURRENCY,
    "status": "delivered",
    "failureCode": None,
    "failureMessage": None,
    "provider": "dtone-main",
    "providerReference": "TLC-884213907",
    "cost": "4.71",
    "costCurrency": CURRENCY,
    "margin": "0.39",
    "marginCurrency": CURRENCY,
    "attempts": 1,
    "retries": 0,
    "refunded": False,
    "createdAt": AT,
    "updatedAt": LATER,
    "livemode": True,
    "pinLast4": None,  # a delivered PIN's last 4 digits (never the whole code)
}
ADMIN_PAYMENT = {
    "id": PAYMENT_ID,
    "orderId": ORDER_ID,
    "account": _ACCOUNT_REF,
    "method": "wallet",
    "status": "captured",
    "amount": PRICE,
    "refundedAmount": "0.00",
    "currency": CURRENCY,
    "channel": "b2b",
    "rechargeCount": 1,
    "failureCode": None,
    "createdAt": AT,
    "capturedAt": AT,
    "livemode": True,
}
ADMIN_PRODUCT: dict[str, Any] = {
    "id": PRODUCT_ID,
    "sku": "DTONE-MX-TELCEL-AIR-100",
    "name": PRODUCT_NAME,
    "productType": "airtime",
    "operator": OPERATOR,
    "country": COUNTRY,
    "denomination": "fixed",
    "localAmount": LOCAL_AMOUNT,
    "localCurrency": LOCAL_CURRENCY,
    "price": PRICE,
    "currency": CURRENCY,
    "rangeMin": None,
    "rangeMax": None,
    "rangeStep": None,
    "pricingRate": None,
    "pricingFee": None,
    "benefits": [],
    "validity": None,
    "active": True,
    "offered": True,
    "rechargesLast30Days": 412,
}
ADMIN_PROVIDER = {
    "name": "dtone-main",
    "kind": "dtone",
    "enabled": True,
    "priority": 10,
    "state": "healthy",
    "balance": "8421.16",
    "currency": CURRENCY,
    "successRate": 0.994,
    "latencyP50Ms": 840,
    "latencyP95Ms": 2150,
    "inFlight": 3,
}
ADMIN_RECONCILIATION = {
    "id": "rcn_5Tg7Yh9Uj1Ik3Ol5Pz7X",
    "provider": "dtone-main",
    "date": "2026-11-23",
    "startedAt": "2026-11-24T02:15:00Z",
    "finishedAt": "2026-11-24T02:15:09Z",
    "reportLines": 318,
    "recharges": 318,
    "matched": 317,
    "missingHere": 0,
    "missingThere": 0,
    "mismatched": 1,
    "reversalsApplied": 0,
    "error": "",
    "mismatches": [
        {
            "kind": "status_mismatch",
            "recharge": RECHARGE_ID_2,
            "reference": RECHARGE_ID_2,
            "providerReference": "TLC-884213955",
            "oursStatus": "dispatched",
            "theirsStatus": "failed",
            "oursAmount": "4.7100",
            "oursCurrency": CURRENCY,
            "theirsAmount": "4.7100",
            "theirsCurrency": CURRENCY,
            "detail": "We show dispatched; the provider reports failed.",
        }
    ],
    "reversals": [],
}
