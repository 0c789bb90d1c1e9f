"""The staff dashboard and the margin page: pages inside the admin with server-rendered SVG
charts and tables."""

from __future__ import annotations

from django.template.response import TemplateResponse
from django.utils import formats, timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy as _lazy

from backoffice import charts, selectors
from recharges.models import Recharge
from reseller.exports import csv_response, csv_safe, csv_stream, xlsx_response
from upstreams.floats import providers_money


def dashboard(request, *, admin_site):
    """GET /admin/dashboard/ (wrapped in ``admin_site.admin_view``: staff only)."""
    data = selectors.dashboard()
    currency = data["currency"]
    series = data["series"]
    labels = [formats.date_format(point.day, "M j") for point in series]
    status_colors = {status: charts.PALETTE.get(status, "#8a94a6") for status in Recharge.Status}
    status_total = sum(data["by_status"].values())
    booked = selectors.margin_by_day(days=data["days"], currency=currency)
    margins = [booked.get(point.day, (0, 0)) for point in series]
    context = {
        **admin_site.each_context(request),
        "title": _("Dashboard"),
        "data": data,
        "summary": data["summary"],
        "sales_chart": charts.column_chart(
            labels=labels,
            series=[charts.Series(_("Sales"), charts.PALETTE["primary"])],
            values=[[point.sales] for point in series],
            label=_("Sales per day, last %(days)d days (%(currency)s)")
            % {"days": data["days"], "currency": currency},
            decimals=2,
            unit=f" {currency}",
            empty=_("No sales in the last %(days)d days") % {"days": data["days"]},
        ),
        "margin_chart": charts.column_chart(
            labels=labels,
            series=[
                charts.Series(_("cost"), charts.PALETTE["other"]),
                charts.Series(_("margin"), charts.PALETTE["delivered"]),
            ],
            values=[[cost, margin] for cost, margin in margins],
            label=_("Revenue per day from the books: cost and margin (%(currency)s)")
            % {"currency": currency},
            decimals=2,
            unit=f" {currency}",
            empty=_("No sales booked in the last %(days)d days") % {"days": data["days"]},
        ),
        "margin_total": sum((margin for _cost, margin in margins), 0),
        "recharges_chart": charts.column_chart(
            labels=labels,
            series=[
                charts.Series(_("delivered"), charts.PALETTE["delivered"]),
                charts.Series(_("failed"), charts.PALETTE["failed"]),
                charts.Series(_("in progress"), charts.PALETTE["other"]),
            ],
            values=[[p.delivered, p.failed, p.other] for p in series],
            label=_("Recharges per day, last %(days)d days") % {"days": data["days"]},
            empty=_("No recharges in the last %(days)d days") % {"days": data["days"]},
        ),
        "status_chart": charts.bar_chart(
            bars=[
                charts.Bar(
                    label=Recharge.Status(status).label,
                    value=count,
                    text=f"{count} ({count / status_total:.0%})" if status_total else "0",
                    color=status_colors[status],
                )
                for status, count in data["by_status"].items()
            ],
            label=_("Recharges by status"),
            empty=_("No recharges yet"),
        ),
        "operators_chart": charts.bar_chart(
            bars=[
                charts.Bar(
                    label=f"{row['name']} ({row['country']})",
                    value=row["rate"],
                    text=_("%(rate)s of %(count)d")
                    % {"rate": f"{row['rate']:.0%}", "count": row["delivered"] + row["failed"]},
                    color=charts.PALETTE["delivered"]
                    if row["rate"] >= 0.9
                    else charts.PALETTE["waitlisted"]
                    if row["rate"] >= 0.7
                    else charts.PALETTE["failed"],
                )
                for row in data["operators"]
            ],
            label=_("Success rate per operator"),
            maximum=1.0,
            empty=_("No finished recharges yet"),
        ),
        "countries_chart": charts.bar_chart(
            bars=[
                charts.Bar(
                    label=row["name"],
                    value=row["recharges"],
                    text=f"{row['recharges']} · {row['amount']} {currency}",
                )
                for row in data["countries"]
            ],
            label=_("Top countries by recharges"),
            empty=_("No recharges yet"),
        ),
    }
    return TemplateResponse(request, "backoffice/dashboard.html", context)


MARGIN_GROUPS = {
    "day": _lazy("Day"),
    "provider": _lazy("Provider"),
    "operator": _lazy("Operator"),
    "country": _lazy("Country"),
    "reseller": _lazy("Reseller"),
}


def margin(request, *, admin_site):
    """GET /admin/margin/: revenue, cost and margin from the books (docs/books.md), grouped
    by day, provider, operator, country or reseller over 7 to 365 days; ``?format=csv`` or
    ``xlsx`` downloads the same rows. Staff only (``admin_site.admin_view``)."""
    by = request.GET.get("by", "day")
    if by not in MARGIN_GROUPS:
        by = "day"
    try:
        days = int(request.GET.get("days", "30"))
    except ValueError:
        days = 30
    if days not in selectors.MARGIN_PERIODS:
        days = 30
    rows = selectors.margin_rows(by=by, days=days)
    header = [
        str(MARGIN_GROUPS[by]), _("Currency"), _("Sales"), _("Revenue"), _("Cost"),
        _("Margin"), _("Margin %"),
    ]  # fmt: skip
    table = [
        [
            csv_safe(str(row["label"])), row["currency"], row["sales"], row["revenue"],
            row["cost"], row["margin"], row["margin_percent"],
        ]
        for row in rows
    ]  # fmt: skip
    stamp = timezone.now().strftime("%Y%m%d")
    filename = f"margin-by-{by}-{days}d-{stamp}"
    export = request.GET.get("format")
    if export == "csv":
        return csv_response(f"{filename}.csv", csv_stream(header, table))
    if export == "xlsx":
        return xlsx_response(f"{filename}.xlsx", header, table, title=_("Margin"))
    totals: dict[str, dict] = {}
    for row in rows:
        total = totals.setdefault(
            row["currency"], {"currency": row["currency"], "sales": 0, "revenue": 0, "cost": 0}
        )
        total["sales"] += row["sales"]
        total["revenue"] += row["revenue"]
        total["cost"] += row["cost"]
    for total in totals.values():
        total["margin"] = total["revenue"] - total["cost"]
    context = {
        **admin_site.each_context(request),
        "title": _("Margin"),
        "rows": rows,
        "totals": list(totals.values()),
        "by": by,
        "days": days,
        "groups": MARGIN_GROUPS,
        "group_name": MARGIN_GROUPS[by],
        "periods": selectors.MARGIN_PERIODS,
        # Each provider's float beside the balance it reports, said what each is.
        "floats": providers_money(),
    }
    return TemplateResponse(request, "backoffice/margin.html", context)
