"""Sign-up and password reset do not tell who has an account by their timing (issue 33): a
known and an unknown address take the same path, the same password hashing and exactly one
message queued in the outbox, and no mail is sent in the request. (Before: ~12 ms for a known
address against ~330 ms for a new one, which alone hashed a password; a reset mailed in the
request, for known addresses only.)"""

from __future__ import annotations

import pytest
from django.core import mail

from emails.models import Email
from tests.counting_hasher import CountingHasher
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

KNOWN, NEW = "known@example.com", "new@example.com"


@pytest.fixture
def hasher(settings):
    settings.PASSWORD_HASHERS = [
        "tests.counting_hasher.CountingHasher",
        "django.contrib.auth.hashers.MD5PasswordHasher",
    ]
    UserFactory(email=KNOWN)
    CountingHasher.calls = 0
    return CountingHasher


def path_of(client, hasher, django_capture_on_commit_callbacks, url: str, data: dict) -> tuple:
    """What one request did: its answer, the passwords it hashed, the messages it queued (by
    kind, to be sent after the commit) and the mail it sent itself."""
    hasher.calls = 0
    before = set(Email.objects.values_list("pk", flat=True))
    with django_capture_on_commit_callbacks() as after_commit:  # not run: only counted
        response = client.post(url, data)
    queued = Email.objects.exclude(pk__in=before)
    return (
        (response.status_code, response["Location"]),
        hasher.calls,
        len(queued),
        len(after_commit),
        len(mail.outbox),
        [email.kind for email in queued],
    )


def test_sign_up_takes_the_same_path_for_a_known_and_a_new_address(
    client, hasher, django_capture_on_commit_callbacks
):
    def signup(email):
        form = {"email": email, "password1": "a-long-pass-42", "password2": "a-long-pass-42"}
        return path_of(
            client, hasher, django_capture_on_commit_callbacks, "/accounts/signup/", form
        )

    known, new = signup(KNOWN), signup(NEW)
    assert known[:-1] == new[:-1] == (((302, "/accounts/signup/sent/")), 1, 1, 1, 0)
    assert (known[-1], new[-1]) == (["signup_existing"], ["signup_confirm"])


def test_a_password_reset_takes_the_same_path_for_a_known_and_an_unknown_address(
    client, hasher, django_capture_on_commit_callbacks
):
    def reset(email):
        url = "/accounts/password-reset/"
        return path_of(client, hasher, django_capture_on_commit_callbacks, url, {"email": email})

    known, unknown = reset(KNOWN), reset(NEW)
    sent = (302, "/accounts/password-reset/sent/")
    assert known[:-1] == unknown[:-1] == (sent, 0, 1, 1, 0)
    assert (known[-1], unknown[-1]) == (["password_reset"], ["password_reset_unknown"])


def test_a_sent_reset_link_is_forgotten_by_the_outbox(
    client, hasher, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/accounts/password-reset/", {"email": KNOWN})
    (message,) = mail.outbox
    assert "/accounts/password-reset/" in message.body
    email = Email.objects.get(kind="password_reset")
    assert email.sent_at is not None and email.context["new_password_path"] == "(link)"
