from django.apps import AppConfig


class BackofficeConfig(AppConfig):
    name = "backoffice"
