"""The benchmark's endpoint (bench/run.py), mounted only when BENCH_ENDPOINTS=true.

``POST /api/v1/_bench/floor`` is the floor the B2B recharge is measured against: the same
authentication (the same API key), permission and throttles as
``POST /api-access/b2b/recharges``, then one row inserted, nothing else. See docs/performance.md.
"""

from __future__ import annotations

from django.urls import path
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.permissions import B2BApiKeyRequired
from accounts.throttling import RECHARGE_THROTTLE_CLASSES
from bench.floor.models import BenchFloorRow


class BenchFloorApi(APIView):
    permission_classes = [B2BApiKeyRequired]
    throttle_classes = RECHARGE_THROTTLE_CLASSES

    @extend_schema(exclude=True)
    def post(self, request):
        row = BenchFloorRow.objects.create(account_id=request.user.account_id)
        return Response({"id": row.pk}, status=201)


urlpatterns = [path("floor", BenchFloorApi.as_view(), name="bench-floor")]
