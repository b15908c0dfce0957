"""The "operators" group: its members manage every tenant, as superusers do."""

from django.db import migrations

OPERATORS_GROUP = "operators"  # kernel.roles.OPERATORS_GROUP, frozen here as migrations are


def create_group(apps, schema_editor):
    apps.get_model("auth", "Group").objects.get_or_create(name=OPERATORS_GROUP)


class Migration(migrations.Migration):
    dependencies = [("accounts", "0001_initial")]

    operations = [migrations.RunPython(create_group, migrations.RunPython.noop)]
