"""Proving an email address (docs/contract.md §12, issue 17): sign-up sends a confirmation
link and creates the account only when it is opened; changing the email confirms the new
address and tells the old one; no form tells whether an address has an account."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.core import mail
from django.utils import timezone

from accounts.models import SignupRequest, User
from tests.factories import PASSWORD, UserFactory
from tests.helpers import link_in, sign_up, window_start

pytestmark = pytest.mark.django_db

SIGNUP = "/accounts/signup/"
CONFIRM = "/accounts/signup/confirm/"


@pytest.fixture
def post(client, django_capture_on_commit_callbacks):
    """``client.post`` that runs what its commit enqueues: the outbox's mail is sent."""

    def send(*args, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return client.post(*args, **kwargs)

    return send


def signup_form(email, password="a-long-passphrase-42", **extra):
    return {"email": email, "password1": password, "password2": password, **extra}


def test_sign_up_creates_nothing_until_the_link_is_opened_once(client, post):
    response = post(SIGNUP, signup_form("nia@example.com", first_name="Nia"))
    assert response["Location"] == "/accounts/signup/sent/"
    sent = client.get(response["Location"]).content.decode()
    assert "nia@example.com" in sent and "Check your email" in sent
    assert not User.objects.exists()
    (message,) = mail.outbox
    assert message.to == ["nia@example.com"] and "Hello Nia," in message.body
    assert "http://testserver/accounts/signup/confirm/" in message.body  # the host used
    assert "text/html" in message.alternatives[0][1]
    link = link_in(message, CONFIRM)
    # Opening the link (or a mail scanner following it) changes nothing: a button does.
    page = client.get(link).content.decode()
    assert "nia@example.com" in page and 'method="post"' in page
    assert not User.objects.exists()
    response = client.post(link)
    assert response["Location"] == "/accounts/profile/"
    user = User.objects.get()
    assert user.email == "nia@example.com" and user.check_password("a-long-passphrase-42")
    assert "Welcome" in client.get("/accounts/profile/").content.decode()
    assert not SignupRequest.objects.exists()
    client.logout()
    again = client.post(link)
    assert again.status_code == 200 and "expired or was already used" in again.content.decode()
    assert User.objects.count() == 1


def test_a_taken_address_gets_the_same_answer_and_its_owner_a_note(client, post):
    owner = UserFactory(email="taken@example.com")
    taken = post(SIGNUP, signup_form("Taken@Example.com"))
    new = post(SIGNUP, signup_form("fresh@example.com"))
    assert taken.status_code == new.status_code == 302
    assert taken["Location"] == new["Location"]
    note, link = mail.outbox
    assert note.to == ["taken@example.com"] and "already has an account" in note.body
    assert "/accounts/password-reset/" in note.body and CONFIRM not in note.body
    assert link.to == ["fresh@example.com"] and CONFIRM in link.body
    owner.refresh_from_db()
    assert owner.check_password(PASSWORD)  # untouched
    assert not SignupRequest.objects.filter(email="taken@example.com").exists()


def test_two_links_for_one_address_make_one_account(client, post):
    post(SIGNUP, signup_form("twice@example.com", password="first-passphrase-41"))
    post(SIGNUP, signup_form("twice@example.com", password="second-passphrase-42"))
    first, second = (link_in(m, CONFIRM) for m in mail.outbox)
    assert client.post(second)["Location"] == "/accounts/profile/"
    client.logout()
    assert client.post(first).status_code == 200  # gone with the other: used
    user = User.objects.get()
    assert user.check_password("second-passphrase-42")


def test_a_link_expires_after_a_day(client, post):
    post(SIGNUP, signup_form("late@example.com"))
    link = link_in(mail.outbox[0], CONFIRM)
    with time_machine.travel(timezone.now() + timedelta(hours=25), tick=False):
        response = client.post(link)
    assert "expired" in response.content.decode()
    assert not User.objects.exists()


def test_sign_up_emails_to_one_address_are_limited_and_the_answer_does_not_change(client, post):
    with window_start(3600):  # the hour's window
        for _ in range(5):
            response = post(SIGNUP, signup_form("flood@example.com"))
            assert response["Location"] == "/accounts/signup/sent/"
    assert len(mail.outbox) == 3  # PASSWORD_RESET_RATE_PER_EMAIL


def test_the_confirmation_speaks_the_visitors_language(client, post):
    post(SIGNUP, signup_form("es@example.com"), HTTP_ACCEPT_LANGUAGE="es")
    (message,) = mail.outbox
    assert "correo" in message.subject.lower()
    client.post(link_in(message, CONFIRM))
    assert User.objects.get().language == "es"


# -- change of email ---------------------------------------------------------------------------

CHANGE = "/accounts/email/"
EMAIL_CONFIRM = "/accounts/email/confirm/"


@pytest.fixture
def logged_in(client):
    user = UserFactory(email="old@example.com")
    client.force_login(user)
    return user


def test_a_new_email_is_used_once_its_link_is_opened_and_the_old_one_is_told(client, logged_in):
    assert "old@example.com" in client.get("/accounts/profile/").content.decode()
    response = client.post(CHANGE, {"email": "New@Example.com", "password": PASSWORD})
    assert response["Location"] == "/accounts/profile/"
    logged_in.refresh_from_db()
    assert logged_in.email == "old@example.com"  # not before the link
    (confirm,) = mail.outbox
    assert confirm.to == ["new@example.com"] and "old@example.com" in confirm.body
    link = link_in(confirm, EMAIL_CONFIRM)
    assert "new@example.com" in client.get(link).content.decode()
    assert client.post(link).status_code == 302
    logged_in.refresh_from_db()
    assert logged_in.email == "new@example.com"
    told = mail.outbox[1]
    assert told.to == ["old@example.com"] and "new@example.com" in told.body
    assert "expired or was already used" in client.post(link).content.decode()
    client.logout()
    assert client.login(username="new@example.com", password=PASSWORD)


def test_changing_email_needs_the_current_password(client, logged_in):
    response = client.post(CHANGE, {"email": "new@example.com", "password": "wrong"})
    assert response.status_code == 200 and "password is not right" in response.content.decode()
    assert mail.outbox == []


def test_a_taken_new_address_gets_the_same_answer_and_a_note(client, logged_in):
    UserFactory(email="taken@example.com")
    response = client.post(CHANGE, {"email": "taken@example.com", "password": PASSWORD})
    assert response["Location"] == "/accounts/profile/"
    (note,) = mail.outbox
    assert note.to == ["taken@example.com"] and EMAIL_CONFIRM not in note.body
    logged_in.refresh_from_db()
    assert logged_in.email == "old@example.com"


def test_an_address_taken_after_the_link_was_sent_is_refused(client, logged_in):
    client.post(CHANGE, {"email": "new@example.com", "password": PASSWORD})
    link = link_in(mail.outbox[0], EMAIL_CONFIRM)
    UserFactory(email="new@example.com")
    response = client.post(link, follow=True)
    assert "Another account uses this address" in response.content.decode()
    logged_in.refresh_from_db()
    assert logged_in.email == "old@example.com"


def test_a_forged_or_stale_link_does_nothing(client, logged_in):
    client.post(CHANGE, {"email": "new@example.com", "password": PASSWORD})
    link = link_in(mail.outbox[0], EMAIL_CONFIRM)
    forged = link[:-3] + ("A" if link[-3] != "A" else "B") + link[-2:]
    assert "expired" in client.post(forged).content.decode()
    with time_machine.travel(timezone.now() + timedelta(hours=25), tick=False):
        assert "expired" in client.post(link).content.decode()
    logged_in.refresh_from_db()
    assert logged_in.email == "old@example.com"


def test_the_helper_signs_up_and_logs_in(client):
    sign_up(client, "helper@example.com")
    assert client.get("/accounts/profile/").status_code == 200
