"""The label-only migrations (reseller.field_labels.AlterFieldLabels): the state they leave is
the models' own, field for field (as ``makemigrations --check`` sees it), they touch no
column, and they refuse to carry anything but labels."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.state import ProjectState
from django.utils import translation

from recharges.models import Recharge
from reseller.field_labels import AlterFieldLabels


@pytest.mark.django_db
def test_the_models_need_no_migration_after_the_labels():
    out = StringIO()
    call_command("makemigrations", "--check", "--dry-run", stdout=out)  # exits 1 on changes
    assert "No changes detected" in out.getvalue()


def test_a_label_reaches_the_state_and_nothing_else_of_the_field_changes():
    state = MigrationLoader(None, ignore_no_migrations=True).project_state()
    field = state.models["recharges", "recharge"].fields["recipient_number"]
    assert str(field.verbose_name) == "recipient number"
    _name, _path, args, kwargs = field.deconstruct()
    _name, _path, model_args, model_kwargs = Recharge._meta.get_field(
        "recipient_number"
    ).deconstruct()
    with translation.override("en"):  # the model's label is lazy: as the migration says it
        assert (args, {**kwargs, "verbose_name": str(kwargs["verbose_name"])}) == (
            model_args,
            {**model_kwargs, "verbose_name": str(model_kwargs["verbose_name"])},
        )


@pytest.mark.django_db
def test_setting_labels_writes_nothing_to_the_database():
    before = ProjectState.from_apps(MigrationLoader(None).project_state().apps)
    after = before.clone()
    operation = AlterFieldLabels(
        model_name="recharge", labels={"recipient_number": {"verbose_name": "to whom"}}
    )
    operation.state_forwards("recharges", after)
    assert after.models["recharges", "recharge"].fields["recipient_number"].verbose_name == (
        "to whom"
    )
    with connection.schema_editor(collect_sql=True) as editor:
        operation.database_forwards("recharges", editor, before, after)
        operation.database_backwards("recharges", editor, after, before)
    assert editor.collected_sql == []


def test_only_labels_may_be_set():
    with pytest.raises(ValueError, match="labels"):
        AlterFieldLabels(model_name="recharge", labels={"amount": {"max_digits": "14"}})
