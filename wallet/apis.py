"""GET /wallet/balance and /wallet/statement."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import request_api_key
from reseller import openapi_examples as ex
from reseller.api import problems
from reseller.errors import ValidationFailed
from reseller.exports import XLSX, csv_response, csv_stream, xlsx_response
from wallet import statements
from wallet.serializers import BalanceOut
from wallet.services import wallet_for

# A statement's query and answers, documented once (also an agent's: network.apis_agents).
STATEMENT_PARAMETERS = [
    OpenApiParameter("from", OpenApiTypes.DATE),
    OpenApiParameter("to", OpenApiTypes.DATE),
    OpenApiParameter("format", str, enum=list(statements.FORMATS)),
]


def statement_responses(*problem_statuses: int) -> dict:
    return {
        (200, "application/json"): OpenApiResponse(
            OpenApiTypes.OBJECT,
            description="The totals and the entries.",
            examples=[ex.response("November so far", ex.STATEMENT)],
        ),
        (200, "text/csv"): OpenApiResponse(
            OpenApiTypes.STR,
            description="format=csv",
            examples=[ex.response("format=csv", ex.STATEMENT_CSV)],
        ),
        (200, XLSX): OpenApiResponse(OpenApiTypes.BINARY, description="format=xlsx"),
        **problems(*problem_statuses),
    }


class BalanceApi(APIView):
    @extend_schema(
        tags=["wallet"],
        summary="Available balance",
        description="Approved top-ups minus captured wallet payments plus refunds. With a test "
        "key: that key's sandbox balance (`livemode: false`).",
        examples=[ex.response("Live wallet", ex.balance())],
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


class StatementApi(APIView):
    @extend_schema(
        tags=["wallet"],
        operation_id="wallet_statement",
        summary="The wallet's ledger entries of a period, with totals",
        description="`from` and `to` are UTC days (YYYY-MM-DD, both included; default: this "
        "month so far). `format=csv` or `xlsx` downloads every entry of the period, streamed, "
        "with a header row; `json` (default) gives the totals and up to 10,000 entries "
        "(`hasMore` when there are more). `amount` is signed: credits positive, debits "
        "negative. Text cells that start with `=`, `+`, `-` or `@` are escaped in files. With "
        "a test key: that key's sandbox balance.",
        parameters=STATEMENT_PARAMETERS,
        responses=statement_responses(400, 401, 403),
    )
    def get(self, request):
        wallet = wallet_for(account=request.user.account, api_key=request_api_key(request))
        return statement_response(request, wallet=wallet)

    def perform_content_negotiation(self, request, force=False):
        # ``format`` names the file here, not a DRF renderer: never a 404 for csv or xlsx.
        return super().perform_content_negotiation(request, force=True)


def statement_response(request, *, wallet):
    """A wallet's statement of the query's period in the query's format (the caller's own, or
    a network agent's read by its parent: ``network.apis_agents``)."""
    wanted = request.query_params.get("format", "json")
    if wanted not in statements.FORMATS:
        raise ValidationFailed(
            fields=[{"field": "format", "code": "invalid_choice", "message": "json, csv or xlsx"}]
        )
    period = statements.period_parse(
        start=request.query_params.get("from"), end=request.query_params.get("to")
    )
    if wanted == "json":
        return Response(statements.statement_json(wallet=wallet, period=period))
    name = f"statement-{period.start}-{period.end}"
    rows = statements.statement_rows(wallet=wallet, period=period)
    if wanted == "csv":
        return csv_response(f"{name}.csv", csv_stream(statements.COLUMNS, rows))
    return xlsx_response(f"{name}.xlsx", statements.COLUMNS, rows, title=name)
