"""Request types for the type checker: a view behind ``login_required`` has a real user."""

from __future__ import annotations

from django.http import HttpRequest

from accounts.models import User


class AuthenticatedRequest(HttpRequest):
    user: User
