from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class RecipientsConfig(AppConfig):
    name = "recipients"
    verbose_name = _("Recipients")
