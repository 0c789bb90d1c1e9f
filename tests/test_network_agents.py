"""Reseller networks, agents (issue 42, contract section 18): a parent creates, lists, shows,
renames, prices, suspends and resumes its agents on the API and on the Network page; the
owner of a new agent joins it through the team invitation; a suspension refuses the agent's
keys, JWTs and sessions and its own agents' at once; and every role of every account is
isolated: an id outside its branch is 404, a role that may not act inside it is 403."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.core import mail
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient
from rest_framework_simplejwt.tokens import RefreshToken

from accounts.models import Account, User
from backoffice.models import StaffAction
from network.agents import agent_create
from network.models import PriceList, PriceListAssignment
from tests.factories import PASSWORD, UserFactory, make_key
from tests.helpers import assert_problem, bearer, client_for, link_in, second_factor_login
from wallet.services import wallet_topup_manual

pytestmark = pytest.mark.django_db

NEW_PASSWORD = "a-long-passphrase-42"
AGENTS = "/api/v1/network/agents"


def jwt_client(user) -> APIClient:
    client = APIClient()
    client.credentials(**bearer(user))
    return client


def session_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def new_agent(parent_user: User, name: str, email: str) -> tuple[Account, User]:
    """An agent created by the real service, with its owner as if the invitation was
    accepted (a user of the agent's account, role owner)."""
    agent = agent_create(parent=parent_user.account, by=parent_user, name=name, owner_email=email)
    return agent, UserFactory(account=agent, role="owner")


@pytest.fixture
def top():
    user = UserFactory(email="top@example.com", account__wallet_currency="USD")
    return user


def test_an_owner_creates_an_agent_in_its_currency_priced_by_its_own_list(top):
    prices = PriceList.objects.create(owner=top.account, name="Shops")
    created = jwt_client(top).post(
        AGENTS,
        {
            "name": "Kiosco Centro",
            "ownerEmail": "Luis@Kiosco.example",
            "priceList": prices.public_id,
        },
        format="json",
    )
    assert created.status_code == 201, created.content
    body = created.json()
    agent = Account.objects.get(public_id=body["id"])
    assert body == {
        "id": agent.public_id,
        "name": "Kiosco Centro",
        "parent": top.account.public_id,
        "level": 2,
        "status": "active",
        "priceList": prices.public_id,
        "balance": "0.00",
        "currency": "USD",
        "sales30d": "0.00",
        "createdAt": body["createdAt"],
    }
    assert agent.parent == top.account and agent.depth == 2 and agent.is_b2b
    assert agent.wallet_currency == "USD" and agent.wallets.get().currency == "USD"
    assert PriceListAssignment.objects.get(account=agent).price_list == prices


def test_a_price_list_of_another_account_is_a_validation_error_naming_it(top):
    foreign = PriceList.objects.create(owner=UserFactory().account, name="Theirs")
    for price_list in (foreign.public_id, "prl_unknown"):
        refused = jwt_client(top).post(
            AGENTS,
            {"name": "Shop", "ownerEmail": "shop@example.com", "priceList": price_list},
            format="json",
        )
        body = assert_problem(refused, 400, "validation_error")
        assert [error["field"] for error in body["errors"]] == ["priceList"]
    assert not Account.objects.filter(parent=top.account).exists()


def test_an_owner_email_that_has_a_user_is_409_email_taken(top):
    UserFactory(email="taken@example.com")
    refused = jwt_client(top).post(
        AGENTS, {"name": "Shop", "ownerEmail": "Taken@Example.com"}, format="json"
    )
    assert_problem(refused, 409, "email_taken")
    assert not Account.objects.filter(parent=top.account).exists()


def test_an_agent_at_the_deepest_level_cannot_have_agents_409_network_too_deep(top):
    _agent, agent_owner = new_agent(top, "Level 2", "l2@example.com")
    sub, sub_owner = new_agent(agent_owner, "Level 3", "l3@example.com")
    assert sub.depth == 3
    refused = jwt_client(sub_owner).post(
        AGENTS, {"name": "Level 4", "ownerEmail": "l4@example.com"}, format="json"
    )
    assert_problem(refused, 409, "network_too_deep")
    assert not Account.objects.filter(parent=sub).exists()
    assert not User.objects.filter(email="l4@example.com").exists()


def test_the_owner_gets_the_invitation_and_sets_a_password_then_logs_in(
    top, client, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        created = jwt_client(top).post(
            AGENTS, {"name": "Kiosco", "ownerEmail": "luis@kiosco.example"}, format="json"
        )
    assert created.status_code == 201
    (message,) = mail.outbox
    assert message.to == ["luis@kiosco.example"] and "Kiosco" in message.subject
    link = link_in(message, "/accounts/invitation/")
    joined = client.post(link, {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD})
    assert joined["Location"] == "/accounts/profile/"
    owner = User.objects.get(email="luis@kiosco.example")
    assert owner.account.public_id == created.json()["id"] and owner.role == "owner"
    login = APIClient().post(
        "/api/v1/auth/login",
        {"email": "luis@kiosco.example", "password": NEW_PASSWORD},
        format="json",
    )
    assert login.status_code == 200
    # The agent's owner runs its own network (one level deeper).
    assert jwt_client(owner).get(AGENTS).json()["count"] == 0


def test_the_list_shows_direct_agents_with_balance_and_the_detail_any_descendant(top):
    agent, agent_owner = new_agent(top, "Shop A", "a@example.com")
    new_agent(top, "Shop B", "b@example.com")
    sub, _sub_owner = new_agent(agent_owner, "Shop A1", "a1@example.com")
    wallet_topup_manual(account=agent, amount=Decimal("25.50"))
    listed = jwt_client(top).get(AGENTS).json()
    assert [(row["name"], row["balance"], row["status"]) for row in listed["results"]] == [
        ("Shop A", "25.50", "active"),
        ("Shop B", "0.00", "active"),
    ]
    assert all(row["sales30d"] == "0.00" for row in listed["results"])
    shown = jwt_client(top).get(f"{AGENTS}/{sub.public_id}")
    assert shown.status_code == 200 and shown.json()["parent"] == agent.public_id


def test_patch_renames_and_prices_a_direct_agent_and_only_its_parent_does(top):
    agent, agent_owner = new_agent(top, "Shop A", "a@example.com")
    sub, _ = new_agent(agent_owner, "Shop A1", "a1@example.com")
    prices = PriceList.objects.create(owner=top.account, name="Shops")
    client = jwt_client(top)
    changed = client.patch(
        f"{AGENTS}/{agent.public_id}",
        {"name": "Shop Alpha", "priceList": prices.public_id},
        format="json",
    )
    assert changed.status_code == 200, changed.content
    assert changed.json()["name"] == "Shop Alpha"
    assert changed.json()["priceList"] == prices.public_id
    cleared = client.patch(f"{AGENTS}/{agent.public_id}", {"priceList": None}, format="json")
    assert cleared.json()["priceList"] is None
    assert not PriceListAssignment.objects.filter(account=agent).exists()
    # A deeper descendant is inside the branch (not 404): only its own parent renames it or
    # sets its list (a list prices over the parent's own price).
    for change in ({"name": "Mine"}, {"priceList": prices.public_id}, {"priceList": None}):
        refused = client.patch(f"{AGENTS}/{sub.public_id}", change, format="json")
        assert_problem(refused, 403, "permission_denied")
    sub.refresh_from_db()
    assert sub.name == "Shop A1" and not PriceListAssignment.objects.filter(account=sub).exists()
    renamed = jwt_client(agent_owner).patch(
        f"{AGENTS}/{sub.public_id}", {"name": "Shop A-one"}, format="json"
    )
    assert renamed.status_code == 200 and renamed.json()["name"] == "Shop A-one"


def test_any_ancestor_suspends_and_resumes_a_deeper_descendant(top):
    """Contract section 18: PATCH takes any id inside the caller's branch; the top of a
    network cuts off a sub-agent without suspending the agent in between."""
    _agent, agent_owner = new_agent(top, "Shop A", "a@example.com")
    sub, sub_owner = new_agent(agent_owner, "Shop A1", "a1@example.com")
    _key, sub_key = make_key(sub_owner, mode="live")
    _key, agent_key = make_key(agent_owner, mode="live")
    suspended = jwt_client(top).patch(
        f"{AGENTS}/{sub.public_id}", {"status": "suspended"}, format="json"
    )
    assert suspended.status_code == 200, suspended.content
    assert suspended.json()["status"] == "suspended" and suspended.json()["id"] == sub.public_id
    assert_problem(client_for(sub_key).get("/api/v1/auth/me"), 403, "account_suspended")
    assert client_for(agent_key).get("/api/v1/auth/me").status_code == 200
    resumed = jwt_client(top).patch(
        f"{AGENTS}/{sub.public_id}", {"status": "active"}, format="json"
    )
    assert resumed.json()["status"] == "active"
    assert client_for(sub_key).get("/api/v1/auth/me").status_code == 200


def test_a_suspension_is_lifted_only_by_whoever_made_it_or_someone_above(top):
    """A parent cannot undo what its own parent decided: the top's suspension of a sub-agent
    stays until the top (not the sub-agent's parent) resumes it; a suspension the parent made
    the top may lift, and the parent too."""
    _agent, agent_owner = new_agent(top, "Shop A", "a@example.com")
    sub, sub_owner = new_agent(agent_owner, "Shop A1", "a1@example.com")
    _key, sub_key = make_key(sub_owner, mode="live")

    def patch(user: User, status: str):
        return jwt_client(user).patch(
            f"{AGENTS}/{sub.public_id}", {"status": status}, format="json"
        )

    assert patch(top, "suspended").status_code == 200
    refused = patch(agent_owner, "active")
    assert_problem(refused, 403, "permission_denied")
    assert "above yours" in refused.json()["detail"]
    assert_problem(client_for(sub_key).get("/api/v1/auth/me"), 403, "account_suspended")
    # Suspending again from below keeps the top's hold on it.
    assert patch(agent_owner, "suspended").json()["status"] == "suspended"
    assert_problem(patch(agent_owner, "active"), 403, "permission_denied")
    assert patch(top, "active").json()["status"] == "active"
    assert client_for(sub_key).get("/api/v1/auth/me").status_code == 200

    assert patch(agent_owner, "suspended").status_code == 200
    assert patch(top, "active").json()["status"] == "active"
    assert patch(agent_owner, "suspended").status_code == 200
    assert patch(agent_owner, "active").json()["status"] == "active"
    assert client_for(sub_key).get("/api/v1/auth/me").status_code == 200


def test_a_staff_suspension_is_lifted_only_by_staff(top):
    """Staff suspend an agent (fraud, a dispute): its parent neither resumes it on the API
    nor with the Network page's button, and staff's resume restores it."""
    agent, agent_owner = new_agent(top, "Shop A", "a@example.com")
    _key, agent_key = make_key(agent_owner, mode="live")
    staff = second_factor_login(Client(), UserFactory(is_staff=True, is_superuser=True))
    staff.post("/admin/accounts/account/", {"action": "suspend", "_selected_action": [agent.pk]})
    # The parent suspending it too changes nothing: staff's hold stays.
    assert (
        jwt_client(top)
        .patch(f"{AGENTS}/{agent.public_id}", {"status": "suspended"}, format="json")
        .json()["status"]
        == "suspended"
    )
    assert_problem(
        jwt_client(top).patch(f"{AGENTS}/{agent.public_id}", {"status": "active"}, format="json"),
        403,
        "permission_denied",
    )
    page = session_client(top)
    answer = page.post(f"/network/{agent.public_id}/status/", {"status": "active"}, follow=True)
    assert "only they can resume it" in answer.content.decode()
    # The page says who holds it, and offers no button that would be refused.
    listing = page.get("/network/").content.decode()
    assert "by our staff" in listing and "Resume" not in listing
    agent.refresh_from_db()
    assert agent.suspended_at is not None and agent.suspended_by_depth == 0
    assert_problem(client_for(agent_key).get("/api/v1/auth/me"), 403, "account_suspended")
    staff.post("/admin/accounts/account/", {"action": "resume", "_selected_action": [agent.pk]})
    assert client_for(agent_key).get("/api/v1/auth/me").status_code == 200
    agent.refresh_from_db()
    assert agent.suspended_at is None and agent.suspended_by_depth is None


def test_staff_take_over_a_suspension_the_parent_made(top):
    """The parent suspended its agent first; staff then suspend it for fraud: the parent can
    no longer resume it."""
    agent, _agent_owner = new_agent(top, "Shop A", "a@example.com")
    staff = second_factor_login(Client(), UserFactory(is_staff=True, is_superuser=True))
    patch = {"status": "suspended"}
    done = jwt_client(top).patch(f"{AGENTS}/{agent.public_id}", patch, format="json")
    assert done.status_code == 200
    agent.refresh_from_db()
    assert agent.suspended_by_depth == top.account.depth
    staff.post("/admin/accounts/account/", {"action": "suspend", "_selected_action": [agent.pk]})
    agent.refresh_from_db()
    assert agent.suspended_by_depth == 0
    resume = {"status": "active"}
    refused = jwt_client(top).patch(f"{AGENTS}/{agent.public_id}", resume, format="json")
    assert_problem(refused, 403, "permission_denied")
    assert StaffAction.objects.filter(action="account.suspend", target_id=agent.public_id).exists()


def test_suspension_cuts_keys_jwt_and_sessions_of_the_agent_and_its_agents_at_once(top):
    agent, agent_owner = new_agent(top, "Shop A", "a@example.com")
    sub, sub_owner = new_agent(agent_owner, "Shop A1", "a1@example.com")
    _key, agent_key = make_key(agent_owner, mode="live")
    _key, sub_key = make_key(sub_owner, mode="test")
    agent_jwt = jwt_client(agent_owner)
    agent_site = session_client(agent_owner)
    sub_site = session_client(sub_owner)
    _sibling, sibling_owner = new_agent(top, "Shop B", "b@example.com")

    def refused() -> list:
        return [
            client_for(agent_key).get("/api/v1/auth/me").status_code,
            client_for(sub_key).get("/api/v1/auth/me").status_code,
            agent_jwt.get("/api/v1/auth/me").status_code,
            agent_site.get("/accounts/profile/").status_code,
            agent_site.get("/api/v1/auth/me").status_code,  # the session on the API
            sub_site.get("/accounts/profile/").status_code,
        ]

    assert refused() == [200] * 6
    agent_refresh, sub_refresh = (str(RefreshToken.for_user(u)) for u in (agent_owner, sub_owner))
    suspended = jwt_client(top).patch(
        f"{AGENTS}/{agent.public_id}", {"status": "suspended"}, format="json"
    )
    assert suspended.json()["status"] == "suspended"
    assert refused() == [403] * 6
    assert_problem(client_for(agent_key).get("/api/v1/auth/me"), 403, "account_suspended")
    assert_problem(client_for(sub_key).get("/api/v1/wallet/balance"), 403, "account_suspended")
    assert_problem(agent_jwt.get("/api/v1/auth/me"), 403, "account_suspended")
    assert_problem(agent_site.get("/api/v1/auth/me"), 403, "account_suspended")
    assert "suspended" in agent_site.get("/accounts/profile/").content.decode()
    # Its people cannot log in; the sibling and the parent work on.
    login = APIClient().post(
        "/api/v1/auth/login", {"email": agent_owner.email, "password": PASSWORD}, format="json"
    )
    assert_problem(login, 403, "account_suspended")
    # Nor renew a session: the refresh token is refused, and not used up by the refusal.
    for refresh in (agent_refresh, sub_refresh):
        refused_refresh = APIClient().post(
            "/api/v1/auth/refresh", {"refresh": refresh}, format="json"
        )
        assert_problem(refused_refresh, 403, "account_suspended")
    assert jwt_client(sibling_owner).get("/api/v1/auth/me").status_code == 200
    assert jwt_client(top).get(f"{AGENTS}/{sub.public_id}").json()["status"] == "active"

    resumed = jwt_client(top).patch(
        f"{AGENTS}/{agent.public_id}", {"status": "active"}, format="json"
    )
    assert resumed.json()["status"] == "active"
    assert refused() == [200] * 6
    renewed = APIClient().post("/api/v1/auth/refresh", {"refresh": agent_refresh}, format="json")
    assert renewed.status_code == 200, renewed.content
    login = APIClient().post(
        "/api/v1/auth/login", {"email": agent_owner.email, "password": PASSWORD}, format="json"
    )
    assert login.status_code == 200


def test_a_suspended_agents_key_costs_no_query_of_its_own(top):
    agent, agent_owner = new_agent(top, "Shop A", "a@example.com")
    _sub, sub_owner = new_agent(agent_owner, "Shop A1", "a1@example.com")
    _key, sub_key = make_key(sub_owner, mode="test")
    client = client_for(sub_key)
    client.get("/api/v1/auth/me")
    with CaptureQueriesContext(connection) as before:
        client.get("/api/v1/auth/me")
    jwt_client(top).patch(f"{AGENTS}/{agent.public_id}", {"status": "suspended"}, format="json")
    with CaptureQueriesContext(connection) as after:
        assert client.get("/api/v1/auth/me").status_code == 403
    # The key's row comes with its account's ancestors: refusing reads nothing more.
    assert len(after) <= len(before)


# -- isolation: every role of every account ------------------------------------------------


def team_of(owner: User) -> dict[str, object]:
    """The credentials of each role of ``owner``'s account: the site session of the owner,
    the developer and finance, the owner's live API key, the finance member's JWT and the
    developer's live key."""
    developer = UserFactory(account=owner.account, role="developer")
    finance = UserFactory(account=owner.account, role="finance")
    _key, owner_key = make_key(owner, mode="live")
    _key, developer_key = make_key(developer, mode="live")
    return {
        "owner": session_client(owner),
        "developer": session_client(developer),
        "finance": session_client(finance),
        "api key": client_for(owner_key),
        "JWT": jwt_client(finance),
        "developer's key": client_for(developer_key),
    }


MAY_ACT = {"owner", "finance", "api key", "JWT"}
READS = ("", "/recharges", "/payments", "/statement")


@pytest.fixture
def networks(top):
    agent, agent_owner = new_agent(top, "Shop A", "a@example.com")
    sub, _ = new_agent(agent_owner, "Shop A1", "a1@example.com")
    _sibling, sibling_owner = new_agent(top, "Shop B", "b@example.com")
    other = UserFactory(email="other@example.com")
    other_agent, _ = new_agent(other, "Elsewhere", "e@example.com")
    return {
        "top": top,
        "agent": agent,
        "agent_owner": agent_owner,
        "sub": sub,
        "sibling_owner": sibling_owner,
        "other": other,
        "other_agent": other_agent,
    }


@pytest.mark.parametrize(
    "role", ["owner", "developer", "finance", "api key", "JWT", "developer's key"]
)
def test_inside_the_branch_a_role_that_may_act_reads_and_others_get_403(networks, role):
    callers = team_of(networks["top"])
    client = callers[role]
    for target in (networks["agent"], networks["sub"]):
        for read in READS:
            response = client.get(f"{AGENTS}/{target.public_id}{read}")
            if role in MAY_ACT:
                assert response.status_code == 200, (role, read, response.content)
            else:
                assert_problem(response, 403, "permission_denied")
    listing = client.get(AGENTS)
    assert listing.status_code == (200 if role in MAY_ACT else 403)


@pytest.mark.parametrize("role", ["developer", "developer's key"])
def test_a_role_that_may_not_act_patching_inside_the_branch_gets_403_not_404(networks, role):
    # Contract section 18: inside the caller's branch, a role that may not act gets 403, the
    # agent's own agent included.
    client = team_of(networks["top"])[role]
    for target in (networks["agent"], networks["sub"]):
        patched = client.patch(
            f"{AGENTS}/{target.public_id}",
            json.dumps({"status": "suspended"}),
            content_type="application/json",
        )
        assert_problem(patched, 403, "permission_denied")
    for target in (networks["agent"], networks["sub"]):
        target.refresh_from_db()
        assert target.suspended_at is None


@pytest.mark.parametrize("caller", ["sibling", "other network", "the agent itself"])
def test_outside_the_branch_every_role_gets_404(networks, caller):
    owner = {
        "sibling": networks["sibling_owner"],
        "other network": networks["other"],
        "the agent itself": networks["agent_owner"],
    }[caller]
    # The agent reads its parent and its sibling; the others read the agent and its own agent.
    targets = (
        [networks["top"].account, networks["other_agent"]]
        if caller == "the agent itself"
        else [networks["agent"], networks["sub"]]
    )
    for role, client in team_of(owner).items():
        for target in targets:
            for read in READS:
                response = client.get(f"{AGENTS}/{target.public_id}{read}")
                assert_problem(response, 404, "not_found")
            patched = client.patch(
                f"{AGENTS}/{target.public_id}",
                json.dumps({"status": "suspended"}),
                content_type="application/json",
            )
            assert_problem(patched, 404, "not_found")
    networks["agent"].refresh_from_db()
    assert networks["agent"].suspended_at is None


def test_an_agent_never_lists_its_parents_other_agents(networks):
    listed = jwt_client(networks["agent_owner"]).get(AGENTS).json()
    assert [row["name"] for row in listed["results"]] == ["Shop A1"]


def test_a_test_key_cannot_manage_a_network(networks):
    _key, test_key = make_key(networks["top"], mode="test")
    client = client_for(test_key)
    assert_problem(client.get(AGENTS), 403, "permission_denied")
    assert_problem(client.get(f"{AGENTS}/{networks['other_agent'].public_id}"), 404, "not_found")


# -- the Network page ---------------------------------------------------------------------


def test_the_network_page_creates_lists_suspends_and_resumes_agents(
    top, django_capture_on_commit_callbacks
):
    client = session_client(top)
    page = client.get("/network/")
    assert page.status_code == 200 and "Network" in page.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        created = client.post(
            "/network/", {"name": "Kiosco", "owner_email": "k@example.com", "price_list": ""}
        )
    assert created["Location"] == "/network/"
    agent = Account.objects.get(parent=top.account)
    assert mail.outbox[0].to == ["k@example.com"]
    listing = client.get("/network/").content.decode()
    assert "Kiosco" in listing and "Suspend" in listing
    client.post(f"/network/{agent.public_id}/status/", {"status": "suspended"})
    agent.refresh_from_db()
    assert agent.suspended_at is not None
    assert "Resume" in client.get("/network/").content.decode()
    client.post(f"/network/{agent.public_id}/status/", {"status": "active"})
    agent.refresh_from_db()
    assert agent.suspended_at is None


def test_the_network_page_is_for_owners_and_finance_and_404_outside_the_branch(networks):
    developer = UserFactory(account=networks["top"].account, role="developer")
    finance = UserFactory(account=networks["top"].account, role="finance")
    assert session_client(developer).get("/network/").status_code == 403
    assert session_client(finance).get("/network/").status_code == 200
    outside = networks["other_agent"].public_id
    for user in (developer, finance, networks["top"]):
        response = session_client(user).post(f"/network/{outside}/status/", {"status": "active"})
        assert response.status_code == 404
    inside = networks["agent"].public_id
    refused = session_client(developer).post(f"/network/{inside}/status/", {"status": "suspended"})
    assert refused.status_code == 403


# -- the back office ----------------------------------------------------------------------


def test_staff_see_the_network_tree_and_suspend_an_account_with_its_descendants(networks):
    staff = UserFactory(is_staff=True, is_superuser=True)
    client = second_factor_login(Client(), staff)
    agent = networks["agent"]
    page = client.get(f"/admin/accounts/account/{agent.pk}/change/").content.decode()
    for name in ("Shop A", "Shop A1", "Shop B", networks["top"].account.name):
        assert name in page
    assert "Elsewhere" not in page  # another network
    _key, sub_key = make_key(networks["sub"].users.get(), mode="live")
    done = client.post(
        "/admin/accounts/account/",
        {"action": "suspend", "_selected_action": [agent.pk]},
    )
    assert done.status_code == 302
    agent.refresh_from_db()
    assert agent.suspended_at is not None
    assert_problem(client_for(sub_key).get("/api/v1/auth/me"), 403, "account_suspended")
    action = StaffAction.objects.get(action="account.suspend")
    assert action.actor == staff and action.target_id == agent.public_id
    client.post("/admin/accounts/account/", {"action": "resume", "_selected_action": [agent.pk]})
    assert client_for(sub_key).get("/api/v1/auth/me").status_code == 200
    assert StaffAction.objects.filter(action="account.resume").count() == 1


def test_a_suspended_agents_people_hear_suspended_even_where_their_role_may_not_go(networks):
    """Suspension is said first: every role of a suspended agent, its developer too on the
    network's routes (which developers may not use), is told the account is suspended, not
    that its role may not (contract section 18: refused "at once with 403
    account_suspended")."""
    team = team_of(networks["agent_owner"])
    jwt_client(networks["top"]).patch(
        f"{AGENTS}/{networks['agent'].public_id}", {"status": "suspended"}, format="json"
    )
    for role, client in team.items():
        for path in (AGENTS, "/api/v1/network/price-lists", "/api/v1/network/transfers"):
            response = client.get(path)
            assert response.status_code == 403, (role, path)
            assert_problem(response, 403, "account_suspended")
