"""GET /wallet/balance."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import request_api_key
from orders.serializers import BalanceOut
from reseller.api import problems
from wallet.services import wallet_for


class BalanceApi(APIView):
    @extend_schema(
        tags=["wallet"],
        summary="Available balance",
        description="Approved top-ups minus captured wallet payments plus refunds. With a test "
        "key: that key's sandbox balance (`livemode: false`).",
        responses={200: BalanceOut, **problems(401, 403)},
    )
    def get(self, request):
        wallet = wallet_for(account=request.user.account, api_key=request_api_key(request))
        return Response(
            BalanceOut(
                {
                    "available": wallet.balance,
                    "currency": wallet.currency,
                    "livemode": wallet.livemode,
                }
            ).data
        )
