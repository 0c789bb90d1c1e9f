"""The upstream airtime provider interface: send a top-up, ask its status, read the balance.

Adapters raise one of three errors so the processor knows what to do:
- ``TransientError``: nothing happened upstream (network refused, 429, 5xx): retry later.
- ``UpstreamTimeout``: the request may have reached the provider: ask ``status`` by our
  reference before retrying or refunding, so a recipient is never topped up twice.
- ``PermanentError``: the provider refused the top-up for good: fail and refund.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Protocol


@dataclass(frozen=True)
class TopupRequest:
    reference: str  # our recharge id, sent as the provider's custom identifier
    recipient_number: str  # E.164
    country: str  # ISO 3166-1 alpha-2
    operator_id: str  # the provider's operator identifier
    product_id: str
    amount: Decimal  # face value in the local currency
    currency: str


@dataclass(frozen=True)
class ProviderResult:
    status: str  # "delivered", "pending" or "failed"
    transaction_id: str = ""
    code: str = ""
    message: str = ""
    raw: dict[str, Any] = field(default_factory=dict)

    DELIVERED = "delivered"
    PENDING = "pending"
    FAILED = "failed"


class ProviderError(Exception):
    def __init__(
        self,
        message: str,
        *,
        code: str = "upstream_error",
        raw: Any = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.raw = raw
        self.retry_after = retry_after


class TransientError(ProviderError):
    pass


class UpstreamTimeout(ProviderError):
    pass


class PermanentError(ProviderError):
    pass


class AirtimeProvider(Protocol):
    name: str

    def send(self, request: TopupRequest) -> ProviderResult: ...

    def status(self, reference: str) -> ProviderResult | None:
        """The outcome of the top-up sent with ``reference``, or None if it never arrived."""
        ...

    def balance(self) -> tuple[Decimal, str]: ...
