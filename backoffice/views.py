"""The staff dashboard: a page inside the admin with server-rendered SVG charts."""

from __future__ import annotations

from django.template.response import TemplateResponse
from django.utils import formats
from django.utils.translation import gettext as _

from backoffice import charts, selectors
from recharges.models import Recharge


def dashboard(request, *, admin_site):
    """GET /admin/dashboard/ (wrapped in ``admin_site.admin_view``: staff only)."""
    data = selectors.dashboard()
    currency = data["currency"]
    series = data["series"]
    labels = [formats.date_format(point.day, "M j") for point in series]
    status_colors = {status: charts.PALETTE.get(status, "#8a94a6") for status in Recharge.Status}
    status_total = sum(data["by_status"].values())
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
                    text=f"{row['rate']:.0%} of {row['delivered'] + row['failed']}",
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
