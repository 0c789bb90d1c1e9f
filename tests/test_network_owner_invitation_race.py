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
from network.agents import AgentEmailTaken, AgentJoined, agent_create, agent_owner_invite
from tests.factories import UserFactory
from tests.helpers import database_url, pids_waiting_on_locks
from tests.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

INVITED = "luis@kiosco.example"


def started_until_waiting(watcher, thread: threading.Thread, waiting: int, *, what: str) -> None:
    """Start ``thread``, then wait until ``waiting`` backends wait on a lock."""
    thread.start()
    wait_until(lambda: len(pids_waiting_on_locks(watcher)) >= waiting, timeout=15, what=what)


def release_all(release: threading.Event, threads: list[threading.Thread]) -> None:
    release.set()
    for thread in threads:
        thread.join(30)


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
        started_until_waiting(watcher, threads[-1], 1, what="the accept to wait")
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
        started_until_waiting(watcher, threads[-1], 2, what="the new invitation to wait")
        release_all(release, threads)

    assert isinstance(results["accept"], User), results
    assert isinstance(results["invite"], AgentJoined), results
    joined = User.objects.get(email=INVITED)
    assert joined.account_id == agent.pk and joined.role == "owner"
    assert not Invitation.objects.filter(account=agent, accepted_at=None).exists()
    assert Account.objects.get(pk=agent.pk).users.count() == 1


def test_two_agents_created_at_once_for_one_owner_address_one_is_refused():
    """Two parents create an agent for the same owner address at the same moment: the second
    waits for the first's transaction, then finds its invitation waiting and is refused
    (409 ``email_taken``), so one address never owns two agents nobody else joined."""
    first, second = UserFactory(email="a@example.com"), UserFactory(email="b@example.com")
    created = threading.Event()
    release = threading.Event()
    results: dict[str, object] = {}

    def create_and_hold() -> None:
        try:
            with transaction.atomic():
                results["first"] = agent_create(
                    parent=first.account, by=first, name="Uno", owner_email=INVITED
                )
                created.set()
                release.wait(30)  # committed only once the second is waiting
        except Exception as exc:  # the assertions below name it
            results["first"] = exc
        finally:
            created.set()
            connection.close()

    def create() -> None:
        try:
            results["second"] = agent_create(
                parent=second.account, by=second, name="Dos", owner_email=INVITED.upper()
            )
        except Exception as exc:  # the assertions below name it
            results["second"] = exc
        finally:
            connection.close()

    with psycopg.connect(database_url(), autocommit=True) as watcher:
        threads = [threading.Thread(target=create_and_hold)]
        threads[0].start()
        assert created.wait(15)
        threads.append(threading.Thread(target=create))
        started_until_waiting(
            watcher, threads[-1], 1, what="the second creation to wait for the first"
        )
        release_all(release, threads)

    assert isinstance(results["first"], Account), results
    assert isinstance(results["second"], AgentEmailTaken), results
    assert list(Invitation.objects.filter(email=INVITED).values_list("account_id", flat=True)) == [
        results["first"].pk
    ]
    assert not Account.objects.filter(parent=second.account).exists()
