"""HTTP adapter for Reloadly's Airtime API (https://developers.reloadly.com/).

- OAuth2 client credentials at ``{auth_url}/oauth/token``; the token is cached (shared cache)
  until shortly before it expires, and fetched again once when the API answers 401. One
  refresh at a time per process: threads that need a token meanwhile wait for it and reuse it.
- One HTTP client per process and settings (keep-alive connections, thread-safe), a timeout
  on every call: the processor's many threads share it.
- ``POST {base_url}/topups`` with ``operatorId``, ``amount``, ``useLocalAmount``,
  ``customIdentifier`` (our recharge id) and ``recipientPhone``.
- Status by our reference: ``GET {base_url}/topups/reports/transactions?customIdentifier=…``.
- Balance: ``GET {base_url}/accounts/balance``.
"""

from __future__ import annotations

import functools
import threading
from decimal import Decimal
from typing import Any

import httpx
import phonenumbers
from django.conf import settings
from django.core.cache import cache

from upstreams.adapters.base import (
    PermanentError,
    ProviderConfig,
    ProviderResult,
    TopupRequest,
    TransientError,
    UpstreamTimeout,
)

ACCEPT = "application/com.reloadly.topups-v1+json"
STATUS_MAP = {
    "SUCCESSFUL": ProviderResult.DELIVERED,
    "PENDING": ProviderResult.PENDING,
    "PROCESSING": ProviderResult.PENDING,
    "FAILED": ProviderResult.FAILED,
    "REFUNDED": ProviderResult.FAILED,
}


@functools.cache
def _shared_client(timeout: float) -> httpx.Client:
    return httpx.Client(
        timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)),
        limits=httpx.Limits(max_connections=200, max_keepalive_connections=50),
        trust_env=False,
    )


_token_lock = threading.Lock()


class ReloadlyProvider:
    name = "reloadly"

    def __init__(
        self,
        *,
        client_id: str,
        client_secret: str,
        base_url: str,
        auth_url: str,
        timeout: float = 10.0,
        client: httpx.Client | None = None,
    ) -> None:
        self.client_id = client_id
        self.client_secret = client_secret
        self.base_url = base_url.rstrip("/")
        self.auth_url = auth_url.rstrip("/")
        self.timeout = timeout
        self.http = client or _shared_client(timeout)
        self._token_key = f"reloadly-token:{self.client_id}:{self.base_url}"

    @classmethod
    def from_config(cls, config: ProviderConfig, *, name: str) -> ReloadlyProvider:
        provider = cls(
            client_id=config.client_id,
            client_secret=config.client_secret,
            base_url=config.base_url,
            auth_url=config.auth_url,
            timeout=config.timeout,
        )
        provider.name = name
        return provider

    @classmethod
    def from_settings(cls) -> ReloadlyProvider:
        return cls(
            client_id=settings.RELOADLY_CLIENT_ID,
            client_secret=settings.RELOADLY_CLIENT_SECRET,
            base_url=settings.RELOADLY_BASE_URL,
            auth_url=settings.RELOADLY_AUTH_URL,
            timeout=settings.RELOADLY_TIMEOUT_SECONDS,
        )

    # -- authentication -------------------------------------------------------------------
    def _token(self, *, refused: str = "") -> str:
        """The cached token; a new one when there is none or when ``refused`` (the token the
        API just answered 401 to) is still the cached one. One request at a time."""
        token = cache.get(self._token_key)
        if token and token != refused:
            return token
        with _token_lock:
            token = cache.get(self._token_key)  # another thread may have fetched it meanwhile
            if token and token != refused:
                return token
            return self._token_fetch()

    def _token_fetch(self) -> str:
        try:
            response = self.http.post(
                f"{self.auth_url}/oauth/token",
                json={
                    "client_id": self.client_id,
                    "client_secret": self.client_secret,
                    "grant_type": "client_credentials",
                    "audience": self.base_url,
                },
                timeout=self.timeout,
            )
        except httpx.HTTPError as exc:
            raise TransientError(
                f"token request failed: {exc}", code="upstream_unavailable"
            ) from exc
        if response.status_code >= 500 or response.status_code == 429:
            raise TransientError("token endpoint unavailable", code="upstream_unavailable")
        if response.status_code != 200:
            raise TransientError(
                "token refused: check RELOADLY_CLIENT_ID/SECRET",
                code="upstream_auth_failed",
                raw=_json(response),
            )
        body = response.json()
        token = body["access_token"]
        ttl = max(30, int(body.get("expires_in", 3600)) - 60)
        cache.set(self._token_key, token, ttl)
        return token

    def _call(
        self,
        method: str,
        path: str,
        *,
        json_body: dict | None = None,
        params: dict | None = None,
        sending: bool = False,
    ) -> httpx.Response:
        refused = ""
        for attempt in (1, 2):
            token = self._token(refused=refused)
            try:
                response = self.http.request(
                    method,
                    f"{self.base_url}{path}",
                    json=json_body,
                    params=params,
                    headers={"Authorization": f"Bearer {token}", "Accept": ACCEPT},
                )
            except httpx.TimeoutException as exc:
                if sending and not isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout):
                    raise UpstreamTimeout(f"no answer from Reloadly: {exc}") from exc
                raise TransientError(f"Reloadly timed out: {exc}", code="upstream_timeout") from exc
            except httpx.HTTPError as exc:
                raise TransientError(
                    f"Reloadly unreachable: {exc}", code="upstream_unavailable"
                ) from exc
            if response.status_code == 401 and attempt == 1:
                refused = token
                continue
            return response
        return response

    # -- the interface --------------------------------------------------------------------
    def send(self, request: TopupRequest) -> ProviderResult:
        number = phonenumbers.parse(request.recipient_number, None)
        response = self._call(
            "POST",
            "/topups",
            sending=True,
            json_body={
                "operatorId": int(request.operator_id)
                if request.operator_id.isdigit()
                else request.operator_id,
                "amount": str(request.amount),
                "useLocalAmount": True,
                "customIdentifier": request.reference,
                "recipientPhone": {
                    "countryCode": request.country,
                    "number": phonenumbers.national_significant_number(number),
                },
            },
        )
        body = _json(response)
        if response.status_code == 429:
            raise TransientError(
                "rate limited by Reloadly",
                code="upstream_rate_limited",
                raw=body,
                retry_after=_retry_after(response),
            )
        if response.status_code >= 500:
            raise TransientError(
                f"Reloadly error {response.status_code}", code="upstream_unavailable", raw=body
            )
        if response.status_code == 409 or body.get("errorCode") == "DUPLICATED_CUSTOM_IDENTIFIER":
            # Reloadly holds a top-up under our reference: the earlier call's outcome, or
            # pending while that call is still being worked on (not listed yet). Never a
            # refusal: failing would refund a top-up the recipient is about to receive.
            # A lookup that fails now is pending too: the top-up is Reloadly's either way.
            try:
                found = self.status(request.reference)
            except (TransientError, UpstreamTimeout):
                found = None
            return found or ProviderResult(
                status=ProviderResult.PENDING, transaction_id="", raw=body
            )
        if response.status_code >= 400:
            raise PermanentError(
                body.get("message") or f"refused ({response.status_code})",
                code=_code(body.get("errorCode")),
                raw=body,
            )
        return _result(body)

    def status(self, reference: str) -> ProviderResult | None:
        response = self._call(
            "GET", "/topups/reports/transactions", params={"customIdentifier": reference, "size": 1}
        )
        if response.status_code == 404:
            return None
        if response.status_code == 429 or response.status_code >= 400:
            raise TransientError(
                f"status lookup failed ({response.status_code})",
                code="upstream_unavailable",
                raw=_json(response),
            )
        content = _json(response).get("content") or []
        matching = [t for t in content if t.get("customIdentifier") == reference]
        return _result(matching[0]) if matching else None

    def balance(self) -> tuple[Decimal, str]:
        response = self._call("GET", "/accounts/balance")
        if response.status_code != 200:
            raise TransientError(f"balance lookup failed ({response.status_code})")
        body = response.json()
        return Decimal(str(body["balance"])), body.get("currencyCode", "USD")


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {"text": response.text[:500]}
    return body if isinstance(body, dict) else {"body": body}


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return float(response.headers.get("Retry-After", ""))
    except ValueError:
        return None


def _code(error_code: str | None) -> str:
    return (error_code or "upstream_rejected").lower()


def _result(body: dict[str, Any]) -> ProviderResult:
    status = STATUS_MAP.get(str(body.get("status", "SUCCESSFUL")).upper(), ProviderResult.PENDING)
    return ProviderResult(
        status=status,
        transaction_id=str(body.get("transactionId", "")),
        code="" if status != ProviderResult.FAILED else "upstream_failed",
        message=str(body.get("message", "")),
        raw=body,
    )
