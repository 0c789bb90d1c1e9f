"""Third-party apps under the names staff read in the back office.

INSTALLED_APPS names these configs instead of the apps' own, the way Django's documentation
renames a reusable app: labels, models and migrations stay theirs, only the displayed name is
ours (and translated). The admin site names their models (``BackofficeAdminSite``).
"""

from django.utils.translation import gettext_lazy as _
from django_otp.plugins.otp_static import apps as otp_static
from django_otp.plugins.otp_totp import apps as otp_totp


class OtpTotpConfig(otp_totp.DefaultConfig):
    verbose_name = _("Authenticator apps")


class OtpStaticConfig(otp_static.DefaultConfig):
    verbose_name = _("Recovery codes")
