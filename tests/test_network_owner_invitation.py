"""An agent's owner joins through an invitation (contract section 18). An address can be
invited to own one agent at a time: a second agent for an address whose invitation still
waits is 409 ``email_taken``, as for an address that has a user (else accepting one would
leave the other agent with nobody in it). An agent nobody has joined yet, its link expired
or sent to a mistyped address, gets a new invitation from its parent's Network page; the old
link stops working."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.core import mail
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import Account, Invitation, User
from tests.factories import UserFactory
from tests.helpers import assert_problem, bearer, link_in

pytestmark = pytest.mark.django_db

AGENTS = "/api/v1/network/agents"
PAGE = "/network/"
NEW_PASSWORD = "a-long-passphrase-42"


@pytest.fixture
def top():
    return UserFactory(email="top@example.com", account__wallet_currency="USD")


def create(user, name, email):
    client = APIClient()
    client.credentials(**bearer(user))
    return client.post(AGENTS, {"name": name, "ownerEmail": email}, format="json")


def session(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def invite(client, agent_id, email):
    return client.post(f"{PAGE}{agent_id}/invite/", {"owner_email": email})


def accept(client, message):
    link = link_in(message, "/accounts/invitation/")
    return client.post(link, {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD})


def test_an_address_already_invited_to_own_an_agent_is_409_email_taken(
    top, django_capture_on_commit_callbacks
):
    assert create(top, "Shop one", "luis@kiosco.example").status_code == 201
    refused = create(top, "Shop two", "Luis@Kiosco.example")
    assert_problem(refused, 409, "email_taken")
    assert "pending invitation" in refused.json()["detail"]
    assert Account.objects.filter(parent=top.account).count() == 1
    # Once the invitation has expired, the address is free again.
    with time_machine.travel(timezone.now() + timedelta(days=8), tick=False):
        assert create(top, "Shop two", "luis@kiosco.example").status_code == 201


def test_an_agent_nobody_joined_gets_a_new_invitation_and_the_old_link_stops_working(
    top, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        agent_id = create(top, "Kiosco", "luis@kiosco.exmaple").json()["id"]  # mistyped
    (first,) = mail.outbox
    page = session(top).get(PAGE).content.decode()
    assert "Invitation sent to luis@kiosco.exmaple" in page
    assert f'action="{PAGE}{agent_id}/invite/"' in page

    client = session(top)
    with django_capture_on_commit_callbacks(execute=True):
        sent = invite(client, agent_id, "luis@kiosco.example")
    assert sent.status_code == 302 and sent["Location"] == PAGE
    page = client.get(PAGE).content.decode()
    assert "We sent a new invitation to luis@kiosco.example." in page
    assert "Invitation sent to luis@kiosco.example" in page
    second = mail.outbox[1]
    assert second.to == ["luis@kiosco.example"]
    assert list(Invitation.objects.filter(account__public_id=agent_id).values_list("email")) == [
        ("luis@kiosco.example",)
    ]
    # The first link (to the mistyped address) no longer works; the new one does.
    accept(Client(), first)
    assert not User.objects.filter(email="luis@kiosco.exmaple").exists()
    accept(Client(), second)
    owner = User.objects.get(email="luis@kiosco.example")
    assert owner.account.public_id == agent_id and owner.role == "owner"
    # Joined: the page offers no invitation for it any more, and the route refuses one.
    page = session(top).get(PAGE).content.decode()
    assert f"{PAGE}{agent_id}/invite/" not in page
    refused = invite(client, agent_id, "someone@example.com")
    assert refused.status_code == 302
    assert "already joined" in client.get(PAGE).content.decode()
    assert len(mail.outbox) == 2
    assert not Invitation.objects.filter(account__public_id=agent_id, accepted_at=None).exists()


def test_an_expired_invitation_is_sent_again_to_the_same_address(
    top, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        agent_id = create(top, "Kiosco", "luis@kiosco.example").json()["id"]
    later = timezone.now() + timedelta(days=8)
    with time_machine.travel(later, tick=False):
        page = session(top).get(PAGE).content.decode()
        assert "Invitation expired" in page
        with django_capture_on_commit_callbacks(execute=True):
            invite(session(top), agent_id, "luis@kiosco.example")
        accept(Client(), mail.outbox[1])
    assert User.objects.get(email="luis@kiosco.example").account.public_id == agent_id


def test_the_new_address_follows_the_same_rules_and_nothing_changes_on_a_refusal(
    top, django_capture_on_commit_callbacks
):
    UserFactory(email="taken@example.com")
    with django_capture_on_commit_callbacks(execute=True):
        agent_id = create(top, "Kiosco", "luis@kiosco.example").json()["id"]
        create(top, "Other", "ana@shop.example")
    client = session(top)
    for email, said in (
        ("taken@example.com", "already has a user or a pending invitation"),
        ("ana@shop.example", "already has a user or a pending invitation"),
        ("not an email", "Enter a valid email address."),
        ("", "This field is required."),
    ):
        response = invite(client, agent_id, email)
        assert response.status_code == 302
        page = client.get(PAGE).content.decode()
        assert said in page, email
    assert "Invitation sent to luis@kiosco.example" in page
    assert len(mail.outbox) == 2
    pending = Invitation.objects.filter(account__public_id=agent_id, accepted_at=None)
    assert list(pending.values_list("email", flat=True)) == ["luis@kiosco.example"]


def test_only_the_parent_with_a_network_role_invites_for_its_direct_agent(
    top, django_capture_on_commit_callbacks
):
    agent_id = create(top, "Kiosco", "luis@kiosco.example").json()["id"]
    developer = UserFactory(account=top.account, role="developer")
    assert invite(session(developer), agent_id, "x@example.com").status_code == 403
    # A deeper agent is inside the branch: the developer's role is refused (403), the owner
    # acts on direct agents only (404); the same for the suspend button.
    child_owner = UserFactory(account=Account.objects.get(public_id=agent_id), role="owner")
    grandchild_id = create(child_owner, "Sub", "sub@kiosco.example").json()["id"]
    for path in (f"{PAGE}{grandchild_id}/invite/", f"{PAGE}{grandchild_id}/status/"):
        form = {"owner_email": "x@example.com", "status": "suspended"}
        assert session(developer).post(path, form).status_code == 403, path
        assert session(top).post(path, form).status_code == 404, path
    assert Account.objects.get(public_id=grandchild_id).suspended_at is None
    stranger = UserFactory(email="stranger@example.com")
    assert invite(session(stranger), agent_id, "x@example.com").status_code == 404
    assert invite(session(top), "acc_nosuchagent", "x@example.com").status_code == 404
    assert (
        Client()
        .post(f"{PAGE}{agent_id}/invite/", {"owner_email": "x@example.com"})["Location"]
        .startswith("/accounts/login/")
    )
    assert sorted(Invitation.objects.values_list("email", flat=True)) == [
        "luis@kiosco.example",
        "sub@kiosco.example",
    ]
