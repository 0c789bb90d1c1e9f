"""The site's Network page (contract section 18): an account's direct agents, with their
balance and last 30 days' sales, a form to create one, suspend/resume buttons, a form that
moves money to or from an agent (the API's transfer service, with its Idempotency-Key), and
the commissions the account earned. Owners and finance members; an agent that is not the
caller's direct agent is 404, whatever the role."""

from __future__ import annotations

from decimal import Decimal

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils.formats import number_format
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from accounts.http import AuthenticatedRequest
from accounts.models import Account
from accounts.suspension import suspended_above
from network import agents, commissions, transfers
from network.forms import AgentForm, OwnerInvitationForm, TransferForm
from network.models import Transfer
from reseller.errors import ApplicationError, NotFound, PermissionDenied
from reseller.idempotency import IdempotencyKeyInUse, fingerprint
from wallet.selectors import wallet_available
from wallet.statements import period_parse

COMMISSIONS_PER_PAGE = 20


def _refused(request: AuthenticatedRequest, exc: PermissionDenied) -> HttpResponse:
    return render(request, "403.html", {"message": exc.detail}, status=403)


def _transfer_form(account: Account, direct: list[Account], data=None) -> TransferForm:
    return TransferForm(data, agents=direct, currency=account.wallet_currency)


def _page(
    request: AuthenticatedRequest,
    *,
    direct: list[Account],
    form: AgentForm | None = None,
    transfer_form: TransferForm | None = None,
    status: int = 200,
) -> HttpResponse:
    account = request.user.account
    month = period_parse(start=None, end=None)
    report = commissions.commissions_report(
        account=account, since=month.since, until=month.until, start=month.start, end=month.end
    )
    balance, currency = wallet_available(account=account)
    awaited = agents.owners_awaited(agents=direct)
    for agent in direct:
        agent.held_above = suspended_above(agent, by_depth=account.depth)  # type: ignore[attr-defined]
        agent.owner_awaited = agent.pk in awaited  # type: ignore[attr-defined]
        agent.invitation = awaited.get(agent.pk)  # type: ignore[attr-defined]
    return render(
        request,
        "network/agents.html",
        {
            "agents": direct,
            "form": form or AgentForm(account=account),
            "can_have_agents": agents.may_have_agents(account=account),
            "transfer_form": transfer_form or _transfer_form(account, direct),
            "balance": balance,
            "currency": currency,
            "commissions": Paginator(
                commissions.commissions_earned(account=account), COMMISSIONS_PER_PAGE
            ).get_page(request.GET.get("page")),
            "month_total": Decimal(report["total"]),
        },
        status=status,
    )


@login_required
@require_http_methods(["GET", "POST"])
def agents_page(request: AuthenticatedRequest) -> HttpResponse:
    try:
        agents.network_may_act(user=request.user, livemode=True)
    except PermissionDenied as exc:
        return _refused(request, exc)
    account = request.user.account
    form = AgentForm(request.POST or None, account=account)
    if request.method == "POST" and form.is_valid():
        try:
            agents.agent_create(
                parent=account,
                by=request.user,
                name=form.cleaned_data["name"],
                owner_email=form.cleaned_data["owner_email"],
                price_list_id=form.cleaned_data["price_list"] or None,
                site_url=request.build_absolute_uri("/"),
            )
        except ApplicationError as exc:
            form.add_error(None, exc.fields[0]["message"] if exc.fields else exc.detail)
        else:
            messages.success(
                request,
                _("%(name)s is your agent. We sent an invitation to %(email)s.")
                % {"name": form.cleaned_data["name"], "email": form.cleaned_data["owner_email"]},
            )
            return redirect("network:agents")
    return _page(request, direct=list(agents.agents_direct(account=account)), form=form)


@login_required
@require_POST
def transfer(request: AuthenticatedRequest) -> HttpResponse:
    """``POST /network/transfers`` from the page: the same service and Idempotency-Key
    rules; the form's hidden key is the key, so a second press of one rendering replays the
    first answer (moves nothing more). A refusal is shown beside the form, with a new key."""
    try:
        agents.network_may_act(user=request.user, livemode=True)
    except PermissionDenied as exc:
        return _refused(request, exc)
    account = request.user.account
    direct = list(agents.agents_direct(account=account))
    form = _transfer_form(account, direct, request.POST)
    if form.is_valid():
        values = form.cleaned_data
        body = {
            "agent": values["agent"],
            "amount": f"{values['amount']:.2f}",
            "currency": account.wallet_currency,
            "direction": values["direction"],
            "memo": values["memo"],
        }
        try:
            reply = transfers.transfer_create(
                parent=account,
                agent_id=values["agent"],
                amount=values["amount"],
                currency=account.wallet_currency,
                direction=values["direction"],
                memo=values["memo"],
                by=request.user,
                idempotency_key=values["key"],
                request_fingerprint=fingerprint(method="POST", path=request.path, body=body),
                request_id=getattr(request, "request_id", None),
            )
        except IdempotencyKeyInUse:  # the first press is still moving it
            messages.info(
                request,
                _("This transfer is already being made: the balances show it once it is done."),
            )
            return redirect("network:agents")
        except ApplicationError as exc:
            form.add_error(None, form.refusal(code=exc.code, detail=str(exc.detail)))
        else:
            if not reply.is_problem:
                messages.success(request, _moved(reply.body, name=form.names[values["agent"]]))
                return redirect("network:agents")
            form.add_error(None, form.refusal(code=reply.body["code"], detail=reply.body["detail"]))
    form.renew_key()
    return _page(request, direct=direct, transfer_form=form, status=400)


def _moved(body: dict, *, name: str) -> str:
    """The confirmation of a transfer (its wire shape, as the service answered it)."""
    words = {
        "amount": number_format(Decimal(body["amount"]), 2),
        "currency": body["currency"],
        "name": name,
    }
    if body["direction"] == Transfer.Direction.FROM_AGENT:
        return _("%(amount)s %(currency)s taken back from %(name)s.") % words
    return _("%(amount)s %(currency)s moved to %(name)s.") % words


def _direct_agent_acted_on(request: AuthenticatedRequest, agent_id: str) -> Account:
    """The direct agent a button acts on (contract section 18, ``agents.agent_changeable``):
    404 outside the caller's branch whatever its role, then ``PermissionDenied`` (the page's
    403) for a role that may not act, then 404 for a deeper descendant."""
    try:
        return agents.agent_changeable(user=request.user, livemode=True, agent_id=agent_id)
    except NotFound as exc:
        raise Http404 from exc


@login_required
@require_POST
def agent_status(request: AuthenticatedRequest, agent_id: str) -> HttpResponse:
    try:
        agent = _direct_agent_acted_on(request, agent_id)
    except PermissionDenied as exc:
        return _refused(request, exc)
    status = request.POST.get("status", "")
    try:
        agents.agent_update(account=request.user.account, agent=agent, status=status)
    except ApplicationError as exc:
        messages.error(request, exc.fields[0]["message"] if exc.fields else exc.detail)
    else:
        text = (
            _("%(name)s is suspended: its keys and sessions, and its agents', are refused.")
            if status == agents.SUSPENDED
            else _("%(name)s is active again.")
        )
        messages.success(request, text % {"name": agent.name})
    return redirect("network:agents")


@login_required
@require_POST
def agent_invite(request: AuthenticatedRequest, agent_id: str) -> HttpResponse:
    """A new invitation for the owner of a direct agent nobody has joined yet (the link
    expired, or went to a mistyped address); the answer shows on the page."""
    try:
        agent = _direct_agent_acted_on(request, agent_id)
    except PermissionDenied as exc:
        return _refused(request, exc)
    form = OwnerInvitationForm(request.POST)
    if not form.is_valid():
        messages.error(request, str(form.errors["owner_email"][0]))
        return redirect("network:agents")
    try:
        email = agents.agent_owner_invite(
            parent=request.user.account,
            agent=agent,
            by=request.user,
            email=form.cleaned_data["owner_email"],
            site_url=request.build_absolute_uri("/"),
        )
    except ApplicationError as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(request, _("We sent a new invitation to %(email)s.") % {"email": email})
    return redirect("network:agents")
