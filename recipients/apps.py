from django.apps import AppConfig


class RecipientsConfig(AppConfig):
    name = "recipients"
