# The database's installation id (toolboxes/installation.py): its row is made on first use.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("toolboxes", "0008_sandbox_egress_allow"),
    ]

    operations = [
        migrations.CreateModel(
            name="Installation",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "installation_id",
                    models.CharField(editable=False, max_length=32, unique=True),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
            ],
        ),
    ]
