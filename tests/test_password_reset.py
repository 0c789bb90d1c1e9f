"""Forgot password (docs/contract.md §12, issue 17 defect 14): a one-use link for an hour, and
the same answer whether or not the email has an account."""

import re

import pytest
from django.core import mail
from django.urls import reverse

from tests.factories import PASSWORD
from tests.helpers import window_start

pytestmark = pytest.mark.django_db

RESET = "/accounts/password-reset/"


@pytest.fixture
def post(client, django_capture_on_commit_callbacks):
    """``client.post`` that runs what its commit enqueues: the outbox's mail is sent."""

    def send(*args, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return client.post(*args, **kwargs)

    return send


def link_in(message) -> str:
    return re.search(r"https?://[^/\s]+(/accounts/password-reset/\S+/)", message.body).group(1)


def test_the_login_page_offers_a_forgotten_password(client):
    assert RESET in client.get(reverse("accounts:login")).content.decode()


def test_a_reset_link_by_email_sets_a_new_password_once(client, user, post):
    response = post(RESET, {"email": user.email.upper()}, follow=True)
    assert "Check your email" in response.content.decode()
    (message,) = mail.outbox
    assert message.to == [user.email]
    assert message.alternatives and "text/html" in message.alternatives[0][1]
    link = link_in(message)
    form = client.get(link, follow=True)
    assert 'name="new_password1"' in form.content.decode()
    done = client.post(
        form.redirect_chain[-1][0],
        {"new_password1": "a-brand-new-passphrase-7", "new_password2": "a-brand-new-passphrase-7"},
        follow=True,
    )
    assert "Your new password is saved." in done.content.decode()
    assert client.login(username=user.email, password="a-brand-new-passphrase-7")
    assert not client.login(username=user.email, password=PASSWORD)
    client.logout()
    again = client.get(link, follow=True).content.decode()
    assert "expired or was already used" in again


def test_an_unknown_email_gets_the_same_answer_and_a_note_instead_of_a_link(client, user, post):
    known = post(RESET, {"email": user.email})
    unknown = post(RESET, {"email": "nobody@example.com"})
    assert known.status_code == unknown.status_code == 302
    assert known["Location"] == unknown["Location"]
    link, note = mail.outbox
    assert link.to == [user.email] and "/accounts/password-reset/" in link.body
    assert note.to == ["nobody@example.com"] and "no account uses it" in note.body
    assert "/accounts/password-reset/" not in note.body and "/accounts/signup/" in note.body


def test_reset_emails_to_one_address_are_limited_and_the_answer_does_not_change(client, user, post):
    with window_start(3600):  # the hour's window
        for _ in range(5):
            response = post(RESET, {"email": user.email})
            assert response.status_code == 302 and response["Location"].endswith("/sent/")
    assert len(mail.outbox) == 3  # PASSWORD_RESET_RATE_PER_EMAIL


def test_the_reset_email_speaks_the_visitors_language(client, user, post):
    post(RESET, {"email": user.email}, HTTP_ACCEPT_LANGUAGE="es")
    (message,) = mail.outbox
    assert "contraseña" in message.subject.lower()
