"""The floor endpoint's one table (bench.floor.apis)."""

from django.db import models


class BenchFloorRow(models.Model):
    """One row per request of the benchmark's floor endpoint (mounted only with
    BENCH_ENDPOINTS=true): the cheapest write an authenticated API call can make."""

    account = models.ForeignKey("accounts.Account", on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"bench floor row {self.pk}"
