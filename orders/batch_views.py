"""The batch pages of the dashboard (issue 18): upload a CSV or XLSX file, see every bad row by
line and column before anything is charged, confirm the total, then follow the batch live."""

from __future__ import annotations

import secrets

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from accounts.http import AuthenticatedRequest
from orders import batch_files
from orders.batches import batch_object, batch_place, batch_results_csv
from orders.models import Batch
from orders.pricing import price_order
from recharges.models import Recharge
from recharges.state import LIVE_STATUSES
from reseller.errors import ApplicationError
from reseller.exports import csv_response
from reseller.idempotency import IdempotencyKeyInUse
from wallet.services import wallet_get_or_create

PENDING_SECONDS = 30 * 60  # a checked file waits this long for its confirmation


def _pending_key(request: AuthenticatedRequest, token: str) -> str:
    return f"batch-upload:{request.user.pk}:{token}"


def _b2b_only(request: AuthenticatedRequest) -> HttpResponse | None:
    if request.user.account.is_b2b:
        return None
    return render(request, "batches/not_b2b.html", status=403)


def _recent(request: AuthenticatedRequest):
    return (
        Batch.objects.filter(account=request.user.account, livemode=True)
        .select_related("order")
        .order_by("-id")
    )


def _rows(page) -> list[tuple[Batch, dict]]:
    return [(batch, batch_object(batch=batch)) for batch in page.object_list]


@login_required
@require_GET
def batches(request: AuthenticatedRequest) -> HttpResponse:
    if refused := _b2b_only(request):
        return refused
    page = Paginator(_recent(request), 20).get_page(request.GET.get("page"))
    return render(request, "batches/list.html", {"page": page, "rows": _rows(page)})


@login_required
@require_POST
def batch_upload(request: AuthenticatedRequest) -> HttpResponse:
    """Check every row of the file; show its errors, or the total to confirm."""
    if refused := _b2b_only(request):
        return refused
    upload = request.FILES.get("file")
    if upload is None:
        messages.error(request, _("Choose a .csv or .xlsx file."))
        return redirect("orders:batches")
    wallet = wallet_get_or_create(account=request.user.account)
    parsed = batch_files.parse(
        name=upload.name or "",
        data=upload.read(batch_files.MAX_BYTES + 1),
        currency=wallet.currency,
    )
    if parsed.errors or parsed.validated is None:
        page = Paginator(_recent(request), 20).get_page(1)
        return render(
            request,
            "batches/list.html",
            {
                "page": page,
                "rows": _rows(page),
                "errors": parsed.errors[:500],
                "error_count": len(parsed.errors),
                "filename": upload.name,
            },
            status=400,
        )
    lines = parsed.validated["lines"]
    try:
        priced = price_order(account=request.user.account, lines=lines, currency=wallet.currency)
    except ApplicationError as exc:  # a product no longer offered
        messages.error(request, str(exc.detail))
        return redirect("orders:batches")
    token = secrets.token_urlsafe(18)
    cache.set(
        _pending_key(request, token),
        {"items": parsed.items, "filename": upload.name},
        PENDING_SECONDS,
    )
    return render(
        request,
        "batches/confirm.html",
        {
            "token": token,
            "filename": upload.name,
            "lines": len(lines),
            "units": sum(line.quantity for line in lines),
            "total": priced.total,
            "currency": priced.currency,
            "balance": wallet.balance,
            "covered": wallet.balance >= priced.total,
            # The first rows as the file gives them, each with its product (named, not by id).
            "preview": [
                (item, line.product) for item, line in zip(parsed.items[:10], lines, strict=False)
            ],
        },
    )


@login_required
@require_POST
def batch_confirm(request: AuthenticatedRequest) -> HttpResponse:
    """Place the checked file as one batch. The token is the Idempotency-Key: a second press
    of the button (or a reload) shows the same batch, never a second one."""
    if refused := _b2b_only(request):
        return refused
    token = request.POST.get("token", "")
    pending = cache.get(_pending_key(request, token)) if token else None
    if pending is None:
        messages.error(request, _("This upload expired. Upload the file again."))
        return redirect("orders:batches")
    wallet = wallet_get_or_create(account=request.user.account)
    checked = batch_files.check(items=pending["items"], currency=wallet.currency)
    if not checked.is_valid():  # the catalog changed meanwhile
        messages.error(request, _("Some rows are no longer valid. Upload the file again."))
        return redirect("orders:batches")
    try:
        outcome = batch_place(
            account=request.user.account,
            user=request.user,
            lines=checked.validated_data["lines"],
            references=checked.validated_data["references"],
            currency=wallet.currency,
            idempotency_key=f"site-batch-{token}",
            request_fingerprint=token,
        )
    except IdempotencyKeyInUse:  # the first press is still placing it
        messages.info(request, _("This batch is being placed: it shows here once it is."))
        return redirect("orders:batches")
    except ApplicationError as exc:  # 402: the wallet no longer covers it
        messages.error(request, str(exc.detail))
        return redirect("orders:batches")
    if outcome.is_problem:
        messages.error(request, str(outcome.body.get("detail", "")))
        return redirect("orders:batches")
    return redirect("orders:batch", batch_id=outcome.body["id"])


def _own(request: AuthenticatedRequest, batch_id: str) -> Batch:
    batch = (
        Batch.objects.select_related("order")
        .filter(public_id=batch_id, account=request.user.account, livemode=True)
        .first()
    )
    if batch is None:
        raise Http404
    return batch


@login_required
@require_GET
def batch(request: AuthenticatedRequest, batch_id: str) -> HttpResponse:
    found = _own(request, batch_id)
    shown = batch_object(batch=found)
    counts = [  # every status a live recharge can be in, in words, with 0s
        (status, label, shown["counts"].get(status, 0))
        for status, label in Recharge.Status.choices
        if status in LIVE_STATUSES
    ]
    return render(
        request, "batches/detail.html", {"batch": found, "object": shown, "counts": counts}
    )


@login_required
@require_GET
def batch_status(request: AuthenticatedRequest, batch_id: str) -> JsonResponse:
    """What the batch page polls while the batch runs."""
    return JsonResponse(batch_object(batch=_own(request, batch_id)))


@login_required
@require_GET
def batch_results(request: AuthenticatedRequest, batch_id: str) -> StreamingHttpResponse:
    found = _own(request, batch_id)
    return csv_response(f"{found.public_id}-results.csv", batch_results_csv(batch=found))
