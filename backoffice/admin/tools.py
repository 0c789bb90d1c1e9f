"""Pieces the admin modules share: staff actions that run a service per selected row, the
intermediate form some of them ask for, read-only registrations and CSV export."""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.http import HttpResponse
from django.template.response import TemplateResponse
from django.utils import formats, timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _

from reseller.errors import ApplicationError

if TYPE_CHECKING:
    from django.utils.functional import _StrPromise


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows staff may look at but never add, edit or delete by hand (money, history, audit).

    Changes go through admin actions that call services; those actions declare
    ``permissions=["operate"]``, granted to whoever holds the model's change permission.
    """

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def has_operate_permission(self, request) -> bool:
        opts = self.opts
        return request.user.has_perm(f"{opts.app_label}.change_{opts.model_name}")


class ReadOnlyInline:
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


def run_each(
    modeladmin: admin.ModelAdmin,
    request,
    objects: Iterable[Any],
    apply: Callable[[Any], Any],
    *,
    done_message: str | _StrPromise | Callable[[int], str],
) -> int:
    """Call ``apply`` (a staff service) on each object; report refusals one by one.

    ``done_message`` is a ``%(count)d`` template: ``ngettext_lazy(one, many, "count")`` picks
    the form for the count; or a function of the count.
    """
    done = 0
    for obj in objects:
        try:
            apply(obj)
        except ApplicationError as exc:
            modeladmin.message_user(request, f"{obj}: {exc.detail}", messages.ERROR)
        else:
            done += 1
    text = done_message(done) if callable(done_message) else str(done_message % {"count": done})
    modeladmin.message_user(request, text, messages.SUCCESS if done else messages.WARNING)
    return done


def form_action(
    modeladmin: admin.ModelAdmin,
    request,
    queryset,
    *,
    form_class: type[forms.Form],
    title: str,
    apply: Callable[[dict], Any],
    initial: dict | None = None,
):
    """An admin action that first asks for input (a reason, an amount, a percentage).

    The first POST (from the changelist) shows the form; the second (with ``apply``) validates
    it and calls ``apply(cleaned_data)``; returning None sends staff back to the changelist.
    """
    if "apply" in request.POST:
        form = form_class(request.POST)
        if form.is_valid():
            apply(form.cleaned_data)
            return None
    else:
        form = form_class(initial=initial)
    context = {
        **modeladmin.admin_site.each_context(request),
        "title": title,
        "form": form,
        "objects": list(queryset[:200]),
        "count": queryset.count(),
        "action": request.POST.get("action", ""),
        "selected": request.POST.getlist(helpers.ACTION_CHECKBOX_NAME),
        "select_across": request.POST.get("select_across", "0"),
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "opts": modeladmin.opts,
        "media": modeladmin.media + form.media,
    }
    return TemplateResponse(request, "backoffice/action_form.html", context)


def csv_response(*, filename: str, header: list[str], rows: Iterable[list[Any]]) -> HttpResponse:
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}-{stamp}.csv"'
    writer = csv.writer(response)
    writer.writerow(header)
    for row in rows:
        writer.writerow([_csv_cell(value) for value in row])
    return response


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if hasattr(value, "isoformat"):
        return value.isoformat()
    text = str(value)
    # Spreadsheets run cells that start with these as formulas (CSV injection).
    if text[:1] in ("=", "+", "-", "@") and not _is_number(text):
        return "'" + text
    return text


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def two_lines(first: object, second: object = "", *, nowrap: bool = False) -> SafeString:
    """A compact list cell: the figure staff scan for, and a smaller grey line under it
    (admin.css, ``bo-sub``). Both escaped."""
    style = ' class="nowrap"' if nowrap else ""
    if second in ("", None):
        return format_html("<span{}>{}</span>", style, first)
    return format_html('<span{}>{}</span><br><span class="bo-sub">{}</span>', style, first, second)


def breakable(code: str) -> SafeString:
    """A code (``invalid_recipient``) that may wrap after its underscores in a narrow cell."""
    return format_html_join(mark_safe("_<wbr>"), "{}", ((part,) for part in code.split("_")))


def short_time(moment) -> str:
    """A time as a list shows it: short, in the staff's language and the project's zone."""
    return formats.date_format(timezone.localtime(moment), "SHORT_DATETIME_FORMAT")


class ReasonForm(forms.Form):
    reason = forms.CharField(label=_("Reason"), max_length=200)
