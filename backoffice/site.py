"""The staff admin site: Django's admin plus the dashboard at /admin/dashboard/ and the
margin page at /admin/margin/.

Outside the ``backoffice.admin`` package on purpose: Django builds the default site lazily on
the first registration, and that import must not trigger the registrations themselves.
"""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, path
from django_otp.admin import OTPAdminSite

from accounts.forms import AdminLoginForm
from backoffice import views


class BackofficeAdminSite(OTPAdminSite):
    """The default admin site (see ``BackofficeAdminConfig``); every app registers on it.

    Staff sign in with a second factor (django-otp): a session whose user was not verified by
    their authenticator (or a recovery code) is treated as not staff. Logins are limited like
    the site's and the API's.
    """

    login_form = AdminLoginForm

    def __init__(self, name: str = "admin") -> None:
        super().__init__(name)

    def get_urls(self) -> list[URLResolver | URLPattern]:
        dashboard = self.admin_view(lambda request: views.dashboard(request, admin_site=self))
        margin = self.admin_view(lambda request: views.margin(request, admin_site=self))
        return [
            path("dashboard/", dashboard, name="dashboard"),
            path("margin/", margin, name="margin"),
            *super().get_urls(),
        ]
