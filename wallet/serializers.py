"""What the API shows of a wallet."""

from __future__ import annotations

from rest_framework import serializers


class BalanceOut(serializers.Serializer):
    available = serializers.DecimalField(max_digits=12, decimal_places=2)
    currency = serializers.CharField()
    livemode = serializers.BooleanField()
