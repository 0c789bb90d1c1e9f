"""A password hasher for tests that counts the passwords it hashes (``PASSWORD_HASHERS``)."""

from __future__ import annotations

from django.contrib.auth.hashers import MD5PasswordHasher


class CountingHasher(MD5PasswordHasher):
    """MD5 (the suite's hasher) that counts the passwords it hashes."""

    algorithm = "counting_md5"
    calls = 0

    def encode(self, password, salt):
        type(self).calls += 1
        return super().encode(password, salt)
