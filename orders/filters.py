"""Query filters of the recharge search (django-filter), named exactly as on the wire
(docs/contract.md §11): ``status`` (repeated, or separated by commas),
``recipientNumber``, ``orderId``, ``createdAfter``/``createdBefore`` (RFC 3339) and
``idempotencyKey``.

A parameter given with a bad value is a 400 ``validation_error`` naming it (a bad status by its
place, ``status[1]``), with DRF's codes and messages, as the API's other query errors; a given
but empty text or time is refused too, never read as "no filter". The view refuses parameters
that are not listed here.
"""

from __future__ import annotations

import contextlib
from datetime import datetime
from typing import Any

import django_filters
from django import forms
from django.db.models import Q, QuerySet
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.text import format_lazy
from django.utils.translation import gettext as _
from rest_framework import fields as drf_fields
from rest_framework.exceptions import ErrorDetail

from recharges.models import Recharge
from recharges.sandbox import sandbox_due
from reseller.errors import flatten_validation_errors

S = Recharge.Status
RFC_3339 = "YYYY-MM-DDThh:mm[:ss[.uuuuuu]][+HH:MM|-HH:MM|Z]"
_DRF_TEXT = drf_fields.CharField.default_error_messages
_DRF_TIME = drf_fields.DateTimeField.default_error_messages
_DRF_CHOICE = drf_fields.ChoiceField.default_error_messages


class TextField(forms.CharField):
    """Text that, when the parameter is given, must not be blank (``?orderId=`` is a 400)."""

    def __init__(self, *, max_length: int, **kwargs):
        kwargs["error_messages"] = {
            "blank": _DRF_TEXT["blank"],
            "max_length": format_lazy(_DRF_TEXT["max_length"], max_length=max_length),
        }
        super().__init__(max_length=max_length, **kwargs)

    def to_python(self, value):
        if value is not None and not str(value).strip():
            raise forms.ValidationError(self.error_messages["blank"], code="blank")
        return super().to_python(value)


class DateTimeField(forms.Field):
    """An RFC 3339 time (a time without offset is read in the current time zone); only ISO
    8601 is accepted, without surrounding spaces, as DRF reads it."""

    default_error_messages = {
        "invalid": format_lazy(_DRF_TIME["invalid"], format=RFC_3339),
    }

    def to_python(self, value) -> datetime | None:
        if value is None:
            return None
        parsed = None
        with contextlib.suppress(ValueError, TypeError):
            parsed = parse_datetime(value)
        if parsed is None:
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        if timezone.is_naive(parsed):
            parsed = timezone.make_aware(parsed)
        return parsed


class ErrorAt(forms.ValidationError):
    """The error of one item of a list parameter, with the item's place."""

    def __init__(self, message, *, code: str, index: int):
        super().__init__(message, code=code)
        self.index = index


class StatusesField(forms.Field):
    """Statuses from every ``status`` parameter, each possibly a comma-separated list; an
    unknown one is an error at its place in that list."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value) -> list[str]:
        statuses = [s for item in value or [] for s in str(item).split(",") if s]
        errors = [
            ErrorAt(
                format_lazy(
                    "{} {}",
                    format_lazy(_DRF_CHOICE["invalid_choice"], input=status),
                    _("Valid statuses: %(statuses)s.") % {"statuses": ", ".join(S.values)},
                ),
                code="invalid_choice",
                index=index,
            )
            for index, status in enumerate(statuses)
            if status not in S.values
        ]
        if errors:
            raise forms.ValidationError(errors)
        return statuses


class StatusFilter(django_filters.Filter):
    field_class = StatusesField


class TextFilter(django_filters.Filter):
    field_class = TextField


class TimeFilter(django_filters.Filter):
    field_class = DateTimeField


class RechargeFilter(django_filters.FilterSet):
    """The recharge search of one account in one mode (``account``, ``livemode``), as the
    recharges were at ``now``: a sandbox ``processing`` row whose 10 seconds are over is a
    ``success`` (recharges/sandbox.py), whether or not a worker has written it yet."""

    status = StatusFilter(method="filter_status")
    recipientNumber = TextFilter(field_name="recipient_number", max_length=32)  # wire names
    orderId = TextFilter(field_name="order__public_id", max_length=64)
    createdAfter = TimeFilter(field_name="created_at", lookup_expr="gte")
    createdBefore = TimeFilter(field_name="created_at", lookup_expr="lt")
    idempotencyKey = TextFilter(method="filter_idempotency_key", max_length=255)

    class Meta:
        model = Recharge
        fields: list[str] = []

    def __init__(self, data, *, queryset: QuerySet[Recharge], account, livemode: bool, now):
        super().__init__(data, queryset=queryset)
        self.account, self.livemode, self.now = account, livemode, now

    def filter_status(self, queryset, name, value: list[str]):
        matches = Q(status__in=value)
        if not self.livemode and (S.SUCCESS in value) != (S.PROCESSING in value):
            due = sandbox_due(self.now)
            matches = matches | due if S.SUCCESS in value else matches & ~due
        return queryset.filter(matches)

    def filter_idempotency_key(self, queryset, name, value: str):
        """The recharges of the orders placed with that key (an order or a batch), kept on
        the order: found after the key's stored answer is purged, when the key may have
        placed another order (both are found)."""
        return queryset.filter(
            order__account=self.account, order__livemode=self.livemode, order__idempotency_key=value
        )

    def error_fields(self) -> list[dict[str, str]]:
        """The form's errors as the problem's ``errors`` (``status[1]``, ``createdAfter``…)."""
        detail: dict[str, Any] = {}
        for name, errors in self.form.errors.as_data().items():
            for error in errors:
                message = ErrorDetail(error.messages[0], code=error.code)
                index = getattr(error, "index", None)
                if index is None:
                    detail.setdefault(name, []).append(message)
                else:
                    detail.setdefault(name, {})[str(index)] = [message]
        return flatten_validation_errors(detail)
