"""What the staff commands share: the staff user an --email names."""

from django.core.management.base import CommandError

from accounts.models import User
from accounts.selectors import user_by_email


def staff_user(email: str) -> User:
    user = user_by_email(email=email)
    if user is None:
        raise CommandError(f"No user with email {email}.")
    if not user.is_staff:
        raise CommandError("Only staff users have a second factor.")
    return user
