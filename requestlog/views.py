"""The request log pages of an API key (docs/request-log.md): the last 30 days, searchable by
request id and status, each request opening to its redacted bodies. Own account only."""

from __future__ import annotations

import json

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from accounts.http import AuthenticatedRequest
from accounts.selectors import api_key_of_account
from requestlog import selectors
from requestlog.forms import RequestSearchForm

PAGE_SIZE = 50
MAX_PAGE = 200  # 10,000 requests; further back, search by request id or status


def _page_number(value: str | None) -> int:
    try:
        return min(max(int(value or 1), 1), MAX_PAGE)
    except ValueError:
        return 1


@login_required
@require_GET
def api_key_requests(request: AuthenticatedRequest, key_id: str) -> HttpResponse:
    key = api_key_of_account(account=request.user.account, public_id=key_id)
    form = RequestSearchForm(request.GET)
    filters: dict = {}
    if form.is_valid():
        status = form.cleaned_data["status"]
        filters = {
            "request_id": form.cleaned_data["request_id"],
            "status_from": status[0] if status else None,
            "status_to": status[1] if status else None,
        }
    number = _page_number(request.GET.get("page"))
    start = (number - 1) * PAGE_SIZE
    # One row more than the page tells whether an older page exists, without counting them.
    rows = list(selectors.api_requests_of_key(key=key, **filters)[start : start + PAGE_SIZE + 1])
    page = {
        "rows": rows[:PAGE_SIZE],
        "number": number,
        "previous": number - 1 if number > 1 else None,
        "next": number + 1 if len(rows) > PAGE_SIZE and number < MAX_PAGE else None,
    }
    return render(
        request,
        "requestlog/requests.html",
        {"key": key, "form": form, "page": page, "searching": any(filters.values())},
    )


def _readable(body: str) -> str:
    """A JSON body indented for reading; anything else (cut short, not JSON) as stored."""
    if body[:1] not in ("{", "["):
        return body
    try:
        return json.dumps(json.loads(body), indent=2, ensure_ascii=False)
    except ValueError:
        return body


@login_required
@require_GET
def api_key_request(request: AuthenticatedRequest, key_id: str, entry_id: str) -> HttpResponse:
    key = api_key_of_account(account=request.user.account, public_id=key_id)
    found = selectors.api_request_of_key(key=key, public_id=entry_id)
    return render(
        request,
        "requestlog/request.html",
        {
            "key": key,
            "entry": found,
            "request_body": _readable(found.request_body),
            "response_body": _readable(found.response_body),
        },
    )
