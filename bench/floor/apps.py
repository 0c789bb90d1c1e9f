from django.apps import AppConfig


class BenchFloorConfig(AppConfig):
    name = "bench.floor"
    label = "bench_floor"
    default_auto_field = "django.db.models.BigAutoField"
