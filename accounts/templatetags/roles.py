"""``{% if user|may:"money" %}``: show a link only to those whose role allows its area."""

from __future__ import annotations

from django import template

from accounts.roles import may as role_may

register = template.Library()


@register.filter
def may(user, area: str) -> bool:
    return bool(user.is_authenticated) and role_may(user, area)
