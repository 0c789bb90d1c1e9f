from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class RequestLogConfig(AppConfig):
    name = "requestlog"
    verbose_name = _("Request log")
