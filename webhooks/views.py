"""The webhook pages of the profile dashboard (docs/webhooks.md): endpoints, their secrets
(shown once), their deliveries of the last 30 days with resend, a test event, and the
account's low-balance threshold (the wallet's form, placed by ``wallet_threshold``).
Another account's endpoint is 404."""

from __future__ import annotations

import secrets

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.cache import add_never_cache_headers
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.http import AuthenticatedRequest
from reseller.errors import ApplicationError
from webhooks import selectors, services
from webhooks.catalogue import EVENT_TYPES
from webhooks.forms import EndpointCreateForm, EndpointEditForm

_FORM_TOKEN_SECONDS = 3600


def _token_key(request: AuthenticatedRequest, token: str) -> str:
    return f"webhook-form:{request.user.pk}:{token}"


def _issue_token(request: AuthenticatedRequest) -> str:
    token = secrets.token_urlsafe(18)
    cache.set(_token_key(request, token), 1, _FORM_TOKEN_SECONDS)
    return token


def _error_message(exc: ApplicationError) -> str:
    return exc.fields[0]["message"] if exc.fields else exc.detail


def _secret_page(request, endpoint, secret: str, *, rotated: bool) -> HttpResponse:
    # The secret is in this response only: not behind a redirect, never cached.
    response = render(
        request,
        "webhooks/secret.html",
        {"endpoint": endpoint, "secret": secret, "rotated": rotated},
    )
    add_never_cache_headers(response)
    return response


@login_required
@require_GET
def endpoints(request: AuthenticatedRequest) -> HttpResponse:
    account = request.user.account
    return render(
        request,
        "webhooks/endpoints.html",
        {"endpoints": selectors.endpoints_of_account(account=account), "account": account},
    )


@login_required
@require_http_methods(["GET", "POST"])
def endpoint_create(request: AuthenticatedRequest) -> HttpResponse:
    if request.method == "GET":
        form = EndpointCreateForm(initial={"form_token": _issue_token(request)})
        return render(request, "webhooks/endpoint_new.html", {"form": form})
    form = EndpointCreateForm(request.POST)
    if not form.is_valid():
        return render(request, "webhooks/endpoint_new.html", {"form": form})
    if not cache.delete(_token_key(request, form.cleaned_data["form_token"])):
        messages.warning(request, _("This form was already sent: the endpoint exists."))
        return redirect("webhooks:endpoints")
    try:
        endpoint = services.endpoint_create(
            account=request.user.account,
            url=form.cleaned_data["url"],
            livemode=form.cleaned_data["mode"] == "live",
            events=form.cleaned_data["events"],
            description=form.cleaned_data["description"],
            user=request.user,
        )
    except ApplicationError as exc:
        form.add_error("url", _error_message(exc))
        data = request.POST.copy()  # the form's data, with a fresh one-use token
        data["form_token"] = _issue_token(request)
        form.data = data
        return render(request, "webhooks/endpoint_new.html", {"form": form})
    return _secret_page(request, endpoint, endpoint.secret, rotated=False)


@login_required
@require_http_methods(["GET", "POST"])
def endpoint_detail(request: AuthenticatedRequest, endpoint_id: str) -> HttpResponse:
    endpoint = selectors.endpoint_of_account(account=request.user.account, public_id=endpoint_id)
    initial = {
        "url": endpoint.url,
        "events": endpoint.events,
        "description": endpoint.description,
        "enabled": endpoint.status == endpoint.Status.ENABLED,
    }
    form = EndpointEditForm(request.POST if request.method == "POST" else None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            services.endpoint_update(
                endpoint=endpoint,
                url=form.cleaned_data["url"],
                events=form.cleaned_data["events"],
                description=form.cleaned_data["description"],
                enabled=form.cleaned_data["enabled"],
            )
        except ApplicationError as exc:
            form.add_error("url", _error_message(exc))
        else:
            messages.success(request, _("The endpoint is saved."))
            return redirect("webhooks:endpoint", endpoint_id=endpoint.public_id)
    return render(
        request,
        "webhooks/endpoint_detail.html",
        {
            "endpoint": endpoint,
            "form": form,
            "deliveries": selectors.recent_deliveries(endpoint=endpoint),
            "event_types": EVENT_TYPES,
        },
    )


@login_required
@require_POST
def endpoint_rotate(request: AuthenticatedRequest, endpoint_id: str) -> HttpResponse:
    endpoint = selectors.endpoint_of_account(account=request.user.account, public_id=endpoint_id)
    secret = services.endpoint_rotate_secret(endpoint=endpoint)
    return _secret_page(request, endpoint, secret, rotated=True)


@login_required
@require_POST
def endpoint_test(request: AuthenticatedRequest, endpoint_id: str) -> HttpResponse:
    endpoint = selectors.endpoint_of_account(account=request.user.account, public_id=endpoint_id)
    try:
        event = services.endpoint_send_test(endpoint=endpoint)
    except ApplicationError as exc:
        messages.error(request, _error_message(exc))
    else:
        messages.success(
            request,
            _("A test event (%(id)s) is on its way; its delivery appears below.")
            % {"id": event.public_id},
        )
    return redirect("webhooks:endpoint", endpoint_id=endpoint.public_id)


@login_required
@require_POST
def delivery_resend(
    request: AuthenticatedRequest, endpoint_id: str, delivery_id: str
) -> HttpResponse:
    endpoint = selectors.endpoint_of_account(account=request.user.account, public_id=endpoint_id)
    delivery = selectors.delivery_of_endpoint(endpoint=endpoint, public_id=delivery_id)
    try:
        services.delivery_resend(delivery=delivery)
    except ApplicationError as exc:
        messages.error(request, _error_message(exc))
    else:
        messages.success(request, _("The event is sent again."))
    return redirect("webhooks:endpoint", endpoint_id=endpoint.public_id)


@login_required
@require_http_methods(["GET", "POST"])
def endpoint_delete(request: AuthenticatedRequest, endpoint_id: str) -> HttpResponse:
    endpoint = selectors.endpoint_of_account(account=request.user.account, public_id=endpoint_id)
    if request.method == "POST":
        services.endpoint_delete(endpoint=endpoint)
        messages.success(request, _("The endpoint is deleted: it gets no more events."))
        return redirect("webhooks:endpoints")
    return render(request, "webhooks/endpoint_delete.html", {"endpoint": endpoint})
