from django.apps import AppConfig


class RechargesConfig(AppConfig):
    name = "recharges"
