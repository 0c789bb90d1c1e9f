"""The staff admin site: Django's admin plus the dashboard at /admin/dashboard/.

Outside the ``backoffice.admin`` package on purpose: Django builds the default site lazily on
the first registration, and that import must not trigger the registrations themselves.
"""

from __future__ import annotations

from django.contrib import admin
from django.urls import URLPattern, URLResolver, path

from accounts.forms import AdminLoginForm
from backoffice import views


class BackofficeAdminSite(admin.AdminSite):
    """The default admin site (see ``BackofficeAdminConfig``); every app registers on it."""

    login_form = AdminLoginForm  # the same login limits as the site and the API

    def get_urls(self) -> list[URLResolver | URLPattern]:
        dashboard = self.admin_view(lambda request: views.dashboard(request, admin_site=self))
        return [path("dashboard/", dashboard, name="dashboard"), *super().get_urls()]
