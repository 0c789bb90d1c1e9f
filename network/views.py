"""The site's Network page (contract section 18): an account's direct agents, with their
balance and last 30 days' sales, a form to create one, and suspend/resume buttons. Owners and
finance members; an agent that is not the caller's direct agent is 404, whatever the role."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from accounts.http import AuthenticatedRequest
from network import agents
from network.forms import AgentForm
from reseller.errors import ApplicationError, NotFound, PermissionDenied


def _refused(request: AuthenticatedRequest, exc: PermissionDenied) -> HttpResponse:
    return render(request, "403.html", {"message": exc.detail}, status=403)


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
    return render(
        request,
        "network/agents.html",
        {
            "agents": list(agents.agents_direct(account=account)),
            "form": form,
            "can_have_agents": agents.may_have_agents(account=account),
        },
    )


@login_required
@require_POST
def agent_status(request: AuthenticatedRequest, agent_id: str) -> HttpResponse:
    try:
        agent = agents.agent_direct(account=request.user.account, agent_id=agent_id)
    except NotFound as exc:  # not a direct agent of the caller's: 404 whatever its role
        raise Http404 from exc
    try:
        agents.network_may_act(user=request.user, livemode=True)
    except PermissionDenied as exc:
        return _refused(request, exc)
    status = request.POST.get("status", "")
    try:
        agents.agent_update(parent=request.user.account, agent=agent, status=status)
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
