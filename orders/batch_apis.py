"""``/api-access/b2b/batches`` (docs/contract.md §13): place a batch, follow it, download its
results."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import request_api_key, request_livemode
from accounts.permissions import B2BApiKeyRequired
from accounts.throttling import RECHARGE_THROTTLE_CLASSES
from orders.apis import reply_response
from orders.batches import (
    batch_counts,
    batch_object,
    batch_place,
    batch_results_csv,
)
from orders.idempotency import fingerprint, read_key
from orders.models import Batch
from orders.serializers import WAIT, BatchIn, BatchOut
from recharges.sandbox import sandbox_counts_present
from reseller import openapi_examples as ex
from reseller.api import B2B_ORDER_CODES, ORDER_STATUSES, problems
from reseller.errors import NotFound
from reseller.exports import csv_response


def _own_batch(request, batch_id: str) -> Batch:
    """The caller's batch in the caller's mode; anything else is 404."""
    batch = (
        Batch.objects.select_related("order")
        .filter(
            public_id=batch_id,
            account=request.user.account,
            livemode=request_livemode(request),
        )
        .first()
    )
    if batch is None:
        raise NotFound()
    return batch


def _batch_shown(batch: Batch) -> dict:
    """The batch object; in test mode with its due ``processing`` recharges counted as the
    success the sandbox will make them (recharges/sandbox.py; nothing is written)."""
    if batch.livemode:
        return batch_object(batch=batch)
    counts = sandbox_counts_present(
        batch_counts(batch=batch), order_id=batch.order_id, now=timezone.now()
    )
    return batch_object(batch=batch, counts=counts)


class BatchesApi(APIView):
    permission_classes = [B2BApiKeyRequired]
    throttle_classes = RECHARGE_THROTTLE_CLASSES

    @extend_schema(
        tags=["b2b"],
        operation_id="batch_create",
        summary="Send up to 10,000 recharge lines as one batch (B2B API keys)",
        description="The order envelope with up to 10,000 lines (`quantity` 1..20 each, an "
        "optional `reference` per line) and a required `Idempotency-Key`. Every line is checked "
        "first: any bad line is a 400 naming each as `items[i].field`, and nothing is charged. "
        "Otherwise one order and one debit for the whole batch, 202 with the batch; 402 when "
        "the wallet cannot cover it. The per-request unit limit of single orders does not "
        "apply. Follow it with GET, or the `batch.completed` webhook event.",
        parameters=[
            OpenApiParameter(
                name="Idempotency-Key",
                location=OpenApiParameter.HEADER,
                required=True,
                type=str,
                description="Unique per batch (1-255 characters). A replay within 24 h returns "
                "the first answer with `Idempotent-Replayed: true`.",
            )
        ],
        request=BatchIn,
        examples=ex.exchange(
            "Two numbers",
            ex.BATCH_REQUEST,
            ex.batch(counts={"queued": 2}, progress=0.0),
            status=202,
        ),
        responses={202: BatchOut, **problems(*ORDER_STATUSES, extra=B2B_ORDER_CODES)},
    )
    def post(self, request):
        key = read_key(request.headers.get("Idempotency-Key"), required=True)
        data = BatchIn(data=request.data)
        data.is_valid(raise_exception=True)
        reply = batch_place(
            account=request.user.account,
            user=request.user,
            api_key=request_api_key(request),
            lines=data.validated_data["lines"],
            references=data.validated_data["references"],
            currency=data.validated_data["base_currency"],
            idempotency_key=key,
            request_fingerprint=fingerprint(
                method=request.method, path=request.path, body=request.data
            ),
            request_id=getattr(request, "request_id", None),
            promotion_wait=data.validated_data["when_promotion_scheduled"] == WAIT,
        )
        return reply_response(reply)


class BatchApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        tags=["b2b"],
        operation_id="batch_retrieve",
        summary="A batch: counts by status and progress",
        description="`status` is `running` until every recharge is final, then `completed`. "
        "Another account's batch, or the other mode's, is 404.",
        examples=[ex.response("Half done", ex.batch())],
        responses={200: BatchOut, **problems(401, 403, 404)},
    )
    def get(self, request, batch_id: str):
        return Response(_batch_shown(_own_batch(request, batch_id)))


class BatchResultsApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        tags=["b2b"],
        operation_id="batch_results",
        summary="A batch's results as CSV, one row per recharge",
        description="Columns: `reference, recharge_id, recipient_number, product_id, status, "
        "amount, currency`. Streamed.",
        responses={
            (200, "text/csv"): OpenApiResponse(
                OpenApiTypes.STR,
                description="The CSV file.",
                examples=[ex.response("Two rows", ex.BATCH_RESULTS_CSV)],
            ),
            **problems(401, 403, 404),
        },
    )
    def get(self, request, batch_id: str):
        batch = _own_batch(request, batch_id)
        rows = batch_results_csv(batch=batch)
        return csv_response(f"{batch.public_id}-results.csv", rows)
