"""A new owner invitation for an agent while its invitee accepts the first one (docs/network.md,
"A new invitation"): real threads and connections against PostgreSQL.

The accept locks its invitation, then inserts the user, whose foreign key takes a KEY SHARE
lock on the agent's account. The new invitation locks the agent's account, then withdraws
the agent's invitations. Had it locked the account FOR UPDATE, the two would wait for each
other and PostgreSQL would abort one (a 500 for that person). It locks it FOR NO KEY UPDATE:
the accept finishes, and the new invitation, seeing the person who joined, is refused."""

from __future__ import annotations

import re
import threading

import psycopg
import pytest
from django.core import mail
from django.db import connection, transaction

from accounts.models import Account, Invitation, User
from accounts.team import invitation_accept
from network.agents import AgentJoined, agent_create, agent_owner_invite
from tests.factories import UserFactory
from tests.helpers import database_url, pids_waiting_on_locks
from tests.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

INVITED = "luis@kiosco.example"


def test_a_new_invitation_while_the_first_is_accepted_is_refused_without_a_deadlock():
    parent = UserFactory(email="top@example.com")
    agent = agent_create(parent=parent.account, by=parent, name="Kiosco", owner_email=INVITED)
    (message,) = mail.outbox
    token = re.search(r"/accounts/invitation/([^/\s]+)/", message.body).group(1)
    elsewhere = UserFactory(email="someone@example.com").account
    release = threading.Event()
    results: dict[str, object] = {}

    def holder() -> None:
        """Holds the invited address in an open transaction: the accept's insert of its user
        waits on the unique email, after it has locked the invitation."""
        try:
            with transaction.atomic():
                UserFactory(email=INVITED, account=elsewhere)
                results["held"] = True
                release.wait(30)
                transaction.set_rollback(True)
        finally:
            connection.close()

    def run(name, call) -> None:
        try:
            results[name] = call()
        except Exception as exc:  # the assertions below name it
            results[name] = exc
        finally:
            connection.close()

    # An autocommit connection of its own sees pg_stat_activity afresh at each look.
    with psycopg.connect(database_url(), autocommit=True) as watcher:
        threads = [threading.Thread(target=holder)]
        threads[0].start()
        wait_until(lambda: results.get("held"), timeout=15, what="the address to be held")
        threads.append(
            threading.Thread(
                target=run,
                args=("accept", lambda: invitation_accept(token=token, password="a-long-pass-42")),
            )
        )
        threads[-1].start()
        wait_until(
            lambda: len(pids_waiting_on_locks(watcher)) >= 1, timeout=15, what="the accept to wait"
        )
        threads.append(
            threading.Thread(
                target=run,
                args=(
                    "invite",
                    lambda: agent_owner_invite(
                        parent=parent.account,
                        agent=agent,
                        by=parent,
                        email="other@kiosco.example",
                    ),
                ),
            )
        )
        threads[-1].start()
        wait_until(
            lambda: len(pids_waiting_on_locks(watcher)) >= 2,
            timeout=15,
            what="the new invitation to wait",
        )
        release.set()
        for thread in threads:
            thread.join(30)

    assert isinstance(results["accept"], User), results
    assert isinstance(results["invite"], AgentJoined), results
    joined = User.objects.get(email=INVITED)
    assert joined.account_id == agent.pk and joined.role == "owner"
    assert not Invitation.objects.filter(account=agent, accepted_at=None).exists()
    assert Account.objects.get(pk=agent.pk).users.count() == 1
