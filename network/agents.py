"""Agents (contract section 18, docs/network.md): the accounts under an account in its
network. Reads (the caller's branch, its direct agents with their balance and sales) and
writes (create, rename, suspend or resume, assign a price list); the API, the site's Network
page and the back office call these.

An agent is an ``accounts.Account`` with a parent: the accounts app writes it
(``account_create_agent``, ``account_set_suspended``…), its wallet is the wallet app's, its
first owner joins it through a team invitation (``accounts.team.invitation_create``). The
network decides who may do what: the depth limit, the caller's branch, its price lists.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import DecimalField, F, OuterRef, Q, QuerySet, Subquery, Sum, Value
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts import services as account_services
from accounts.models import Account, User
from accounts.roles import NETWORK, OWNER, may, refusal_message
from accounts.services import normalise_email
from accounts.team import (
    invitation_expired,
    invitation_queue,
    invitation_waiting,
    invitations_latest,
    invitations_withdraw,
)
from network.models import PriceList, PriceListAssignment
from network.price_lists import price_list_assign
from payments.models import Payment
from reseller.db import advisory_key, advisory_xact_lock
from reseller.errors import ApplicationError, NotFound, PermissionDenied, ValidationFailed
from reseller.money import ZERO
from wallet.models import Wallet
from wallet.services import wallet_get_or_create

ACTIVE, SUSPENDED = "active", "suspended"
STATUSES = (ACTIVE, SUSPENDED)
SALES_DAYS = 30
# Payments that sold something: what stays of them after refunds is the sale.
SOLD = (
    Payment.Status.CAPTURED,
    Payment.Status.PARTIALLY_REFUNDED,
    Payment.Status.REFUNDED,
)
UNCHANGED: Any = object()  # a PATCH that does not name the field


class NetworkTooDeep(ApplicationError):
    code = "network_too_deep"
    status = 409
    title = gettext_lazy("Network too deep")
    default_detail = gettext_lazy(
        "An agent of this account would be deeper than the network allows."
    )


class AgentEmailTaken(ApplicationError):
    code = "email_taken"
    status = 409
    title = gettext_lazy("Email taken")
    default_detail = gettext_lazy(
        "This email already has a user or a pending invitation: an agent's owner needs an "
        "address of its own."
    )


# -- who may act ----------------------------------------------------------------------------


def network_may_act(*, user: User, livemode: bool) -> None:
    """A person (or a live key, with its creator's role) whose role manages the network:
    owners and finance; developers 403. A test key never does: agents are live accounts."""
    if not livemode:
        raise PermissionDenied(_("A test key cannot manage a network: agents are live accounts."))
    if not may(user, NETWORK):
        raise PermissionDenied(refusal_message(NETWORK))


# -- reads ----------------------------------------------------------------------------------


def _branch(account: Account) -> Q:
    """Accounts below ``account``, at any level down to NETWORK_MAX_DEPTH."""
    below = Q(pk__in=[])
    for levels in range(1, max(settings.NETWORK_MAX_DEPTH - account.depth, 0) + 1):
        below |= Q(**{"__".join(["parent"] * levels): account})
    return below


def _with_figures(accounts: QuerySet[Account], *, caller: Account) -> QuerySet[Account]:
    """Each agent with its live balance, its sales of the last 30 days (paid, less refunds)
    and the caller's price list assigned to it (a list of another account is never shown)."""
    since = timezone.now() - timedelta(days=SALES_DAYS)
    money = DecimalField(max_digits=14, decimal_places=2)
    balance = Wallet.objects.filter(account=OuterRef("pk"), kind=Wallet.Kind.LIVE).values(
        "balance"
    )[:1]
    sales = (
        Payment.objects.filter(
            account=OuterRef("pk"), livemode=True, status__in=SOLD, created_at__gte=since
        )
        .order_by()
        .values("account")
        .annotate(total=Sum(F("amount") - F("refunded_amount")))
        .values("total")
    )
    price_list = PriceListAssignment.objects.filter(
        account=OuterRef("pk"), price_list__owner=caller
    ).values("price_list__public_id")[:1]
    return accounts.annotate(
        balance=Coalesce(Subquery(balance), Value(ZERO), output_field=money),
        sales_30d=Coalesce(Subquery(sales), Value(ZERO), output_field=money),
        price_list_id=Subquery(price_list),
    ).select_related("parent")


def agents_direct(*, account: Account) -> QuerySet[Account]:
    """The account's direct agents, oldest first."""
    return _with_figures(Account.objects.filter(parent=account), caller=account).order_by("pk")


def agent_in_branch(*, account: Account, agent_id: str) -> Account:
    """A descendant of ``account`` (any level) by id; 404 for any other id, the caller's own
    included, whatever the caller's role."""
    found = (
        _with_figures(Account.objects.filter(_branch(account)), caller=account)
        .filter(public_id=agent_id)
        .first()
    )
    if found is None:
        raise NotFound()
    return found


def in_branch(*, account: Account, agent_id: str) -> bool:
    """Whether ``agent_id`` names a descendant of ``account`` (any level)."""
    return Account.objects.filter(_branch(account), public_id=agent_id).exists()


def agent_readable(*, user: User, livemode: bool, agent_id: str) -> Account:
    """A descendant the caller may read: 404 outside the caller's branch whatever its role,
    then 403 for a role (or a test key) that may not manage the network."""
    agent = agent_in_branch(account=user.account, agent_id=agent_id)
    network_may_act(user=user, livemode=livemode)
    return agent


def agent_changeable(*, user: User, livemode: bool, agent_id: str) -> Account:
    """A direct agent the caller may change (``agent_readable``'s 404 and 403), then 404 for a
    deeper one: the Network page's buttons act on direct agents."""
    agent = agent_readable(user=user, livemode=livemode, agent_id=agent_id)
    if agent.parent_id != user.account.pk:
        raise NotFound()
    return agent


def may_have_agents(*, account: Account) -> bool:
    """Whether an agent of ``account`` would fit in NETWORK_MAX_DEPTH levels."""
    return account.depth < settings.NETWORK_MAX_DEPTH


def agent_status(agent: Account) -> str:
    return SUSPENDED if agent.suspended_at is not None else ACTIVE


@dataclass(frozen=True)
class TreeNode:
    account: Account
    level: int  # below the root: 0 for the root itself


def network_tree(*, account: Account) -> list[TreeNode]:
    """The whole network ``account`` belongs to, from its top account, depth first (what the
    back office shows): one query per level."""
    top = account
    while top.parent_id is not None:
        top = Account.objects.get(pk=top.parent_id)
    children: dict[int, list[Account]] = {}
    level = [top]
    while level:
        found = list(Account.objects.filter(parent__in=level).order_by("pk"))
        for child in found:
            children.setdefault(child.parent_id or 0, []).append(child)
        level = found
    nodes: list[TreeNode] = []

    def walk(node: Account, depth: int) -> None:
        nodes.append(TreeNode(node, depth))
        for child in children.get(node.pk, []):
            walk(child, depth + 1)

    walk(top, 0)
    return nodes


# -- writes ---------------------------------------------------------------------------------


def _own_price_list(*, account: Account, price_list_id: str) -> PriceList:
    found = PriceList.objects.filter(public_id=price_list_id, owner=account).first()
    if found is None:
        raise ValidationFailed(
            fields=[
                {
                    "field": "priceList",
                    "code": "does_not_exist",
                    "message": _("No price list of yours has this id."),
                }
            ]
        )
    return found


@transaction.atomic
def agent_create(
    *,
    parent: Account,
    by: User,
    name: str,
    owner_email: str,
    price_list_id: str | None = None,
    site_url: str = "",
) -> Account:
    """A new agent of ``parent``: a B2B account one level deeper with a wallet in the
    parent's currency, optionally priced by one of the parent's lists, whose owner is
    invited by email to choose a password (the team invitation, sent once committed).

    409 ``network_too_deep`` past NETWORK_MAX_DEPTH; 409 ``email_taken`` when the address
    has a user; 400 ``validation_error`` (priceList) for a list that is not the parent's."""
    if not may_have_agents(account=parent):
        raise NetworkTooDeep()
    owner_email = _owner_email_free(owner_email)
    price_list = (
        _own_price_list(account=parent, price_list_id=price_list_id) if price_list_id else None
    )
    agent = account_services.account_create_agent(parent=parent, name=name)
    wallet_get_or_create(account=agent)
    if price_list is not None:
        price_list_assign(account=agent, price_list=price_list)
    # Through the outbox: sent after the commit, retried while the mail server is away.
    invitation_queue(account=agent, by=by, email=owner_email, role=OWNER, site_url=site_url)
    return agent


def _owner_email_free(email: str) -> str:
    """The address, normalised, if it may own a new agent: no user has it and no invitation
    waits for it (accepting one would leave the other agent with nobody in it). Asked under
    a lock on the address until the caller's transaction ends: two agents created at once
    for one address, the second waits and finds the first's invitation."""
    email = normalise_email(email)
    advisory_xact_lock(advisory_key("owner-email", email), wait=True)
    if User.objects.filter(email__iexact=email).exists() or invitation_waiting(email=email):
        raise AgentEmailTaken()
    return email


@dataclass(frozen=True)
class OwnerAwaited:
    """A direct agent nobody has joined yet: where its latest invitation went, and whether
    its link has expired (None: no invitation is left)."""

    email: str
    expired: bool


def owners_awaited(*, agents: list[Account]) -> dict[int, OwnerAwaited | None]:
    """Of these agents, those nobody has joined (no user), by id: what the Network page
    offers to invite again. Two queries."""
    joined = set(User.objects.filter(account__in=agents).values_list("account_id", flat=True))
    waiting = [agent for agent in agents if agent.pk not in joined]
    latest = invitations_latest(accounts=waiting)
    return {
        agent.pk: (
            OwnerAwaited(email=found.email, expired=invitation_expired(found))
            if (found := latest.get(agent.pk))
            else None
        )
        for agent in waiting
    }


class AgentJoined(ApplicationError):
    code = "conflict"
    status = 409
    title = gettext_lazy("Conflict")
    default_detail = gettext_lazy(
        "Someone has already joined this agent: its own people invite the rest of its team."
    )


@transaction.atomic
def agent_owner_invite(
    *, parent: Account, agent: Account, by: User, email: str, site_url: str = ""
) -> str:
    """Invite the owner of a direct agent nobody has joined yet, again or at another address
    (the link expired, or went to a mistyped address): its earlier links stop working. The
    address follows ``agent_create``'s rule. 404 for another account's agent; 409 once
    someone joined."""
    if agent.parent_id != parent.pk:
        raise NotFound()
    # One new invitation of an agent at a time. NO KEY: a person joining meanwhile (a user row
    # pointing at the account) is not blocked, so the two cannot deadlock: the withdrawal
    # waits for the accepted invitation, and the check after it sees the new user.
    Account.objects.select_for_update(no_key=True).filter(pk=agent.pk).first()
    invitations_withdraw(account=agent)
    if User.objects.filter(account=agent).exists():
        raise AgentJoined()
    email = _owner_email_free(email)
    invitation_queue(account=agent, by=by, email=email, role=OWNER, site_url=site_url)
    return email


class ParentOnly(PermissionDenied):
    default_detail = gettext_lazy(
        "Only the agent's parent renames it or sets its price list; you may suspend or resume it."
    )


@transaction.atomic
def agent_update(
    *,
    account: Account,
    agent: Account,
    name: str = UNCHANGED,
    status: str = UNCHANGED,
    price_list_id: str | None = UNCHANGED,
) -> Account:
    """``account`` (an ancestor of ``agent``) suspends or resumes it (its descendants follow:
    their keys and sessions are refused while it is suspended; a suspension made higher up,
    by a farther ancestor or by staff, is lifted only from there: 403 ``SuspendedAbove``).
    Its parent also renames it or assigns it one of its lists (``None``: no list), 403 for
    another ancestor (a list prices over the parent's own price). 404 when ``agent`` is not
    below ``account``."""
    if not Account.objects.filter(_branch(account), pk=agent.pk).exists():
        raise NotFound()
    if agent.parent_id != account.pk and (name is not UNCHANGED or price_list_id is not UNCHANGED):
        raise ParentOnly()
    if price_list_id is not UNCHANGED:
        price_list = (
            _own_price_list(account=account, price_list_id=price_list_id) if price_list_id else None
        )
        price_list_assign(account=agent, price_list=price_list)
    if name is not UNCHANGED:
        account_services.account_rename(account=agent, name=name)
    if status is not UNCHANGED:
        if status not in STATUSES:
            raise ValidationFailed(
                fields=[
                    {
                        "field": "status",
                        "code": "invalid_choice",
                        "message": _("Use active or suspended."),
                    }
                ]
            )
        account_services.account_set_suspended(
            account=agent, suspended=status == SUSPENDED, by_depth=account.depth
        )
    return agent
