"""Saved recipients on the site: the list with "top up", saving a number from a receipt or the
list, renaming and forgetting one."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from accounts.http import AuthenticatedRequest
from catalog.models import Operator
from recipients import selectors, services
from recipients.forms import RecipientForm
from recipients.models import SavedRecipient
from reseller.net import local_url


def _operator(value: str) -> Operator | None:
    country, _slash, slug = (value or "").partition("/")
    if not (country and slug):
        return None
    return Operator.objects.filter(country_id=country.upper(), slug=slug, active=True).first()


@login_required
@require_GET
def recipients(request: AuthenticatedRequest) -> HttpResponse:
    saved = list(selectors.recipients_of(account_id=request.user.account_id))
    for recipient in saved:
        operator = recipient.operator
        recipient.top_up_url = selectors.top_up_url(  # type: ignore[attr-defined]
            phone_number=recipient.phone_number,
            country=operator.country_id if operator else None,
            slug=operator.slug if operator else None,
        )
    return render(request, "recipients/list.html", {"recipients": saved, "form": RecipientForm()})


@login_required
@require_POST
def recipient_save(request: AuthenticatedRequest) -> HttpResponse:
    form = RecipientForm(request.POST)
    back = local_url(request, request.POST.get("next", ""))
    if not form.is_valid():
        for errors in form.errors.values():
            for error in errors:
                messages.error(request, str(error))
        return redirect(back or "recipients:list")
    saved = services.recipient_save(
        account=request.user.account,
        name=form.cleaned_data["name"],
        phone_number=form.cleaned_data["phone_number"],
        operator=_operator(form.cleaned_data["operator"]),
    )
    messages.success(
        request,
        _("%(number)s is saved as %(name)s.") % {"number": saved.phone_number, "name": saved.name},
    )
    return redirect(back or "recipients:list")


@login_required
@require_POST
def recipient_delete(request: AuthenticatedRequest, recipient_id: str) -> HttpResponse:
    recipient = SavedRecipient.objects.filter(
        account_id=request.user.account_id, public_id=recipient_id
    ).first()
    if recipient is None:
        raise Http404
    services.recipient_delete(recipient=recipient)
    messages.success(request, _("%(name)s is no longer saved.") % {"name": recipient.name})
    return redirect("recipients:list")
