"""setup_demo (make run): idempotent, and the key and login it prints work. Its serving
(`--serve`, the banner once the server answers): tests/site/test_make_run.py."""

import http.server
import re
import threading
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from accounts.models import Membership
from accounts.oauth_consent import ConsentForm
from tests.harness.tenant_dirs import tenant_dir
from toolboxes.models import ApiKey, Server, Tenant


def run(credentials) -> str:
    out = StringIO()
    # Never the machine's /var/tmp, nor below tmp_path's 0700 parent (refused as a mount).
    data_dir = tenant_dir("demo") / "demo-data"
    call_command(
        "setup_demo", "--credentials", str(credentials), "--data-dir", str(data_dir), stdout=out
    )
    return out.getvalue()


def test_twice_gives_the_same_working_credentials(db, tmp_path):
    credentials = tmp_path / "demo.json"
    first, second = run(credentials), run(credentials)
    key = re.search(r"Demo API key: (\S+)", first).group(1)
    password = re.search(r"password: (\S+)\)", first).group(1)
    assert re.search(r"Demo API key: (\S+)", second).group(1) == key
    assert ApiKey.objects.get(prefix=key.split("_")[1]).matches(key)
    assert get_user_model().objects.get(username="admin").check_password(password)
    assert Tenant.objects.count() == 1
    assert [s.name for s in Server.objects.all()] == ["time", "git"]
    assert oct(credentials.stat().st_mode & 0o777) == "0o600"
    assert '"Authorization": "Bearer ' + key in first


def test_a_lost_credentials_file_gets_a_new_key(db, tmp_path):
    first = run(tmp_path / "a.json")
    second = run(tmp_path / "b.json")
    key_re = r"Demo API key: (\S+)"
    assert re.search(key_re, first).group(1) != re.search(key_re, second).group(1)
    assert "password: (unchanged" in second


def test_the_demo_admin_can_finish_an_oauth_sign_in(db, tmp_path):
    """The README's OAuth sign-in picks a tenant the user administers: make run's admin is
    the demo tenant's admin (an operator of no tenant would be told it is a member of none)."""
    run(tmp_path / "demo.json")
    run(tmp_path / "demo.json")  # idempotent: one membership
    admin = get_user_model().objects.get(username="admin")
    assert admin.is_superuser
    demo = Tenant.objects.get(slug="demo")
    assert list(Membership.objects.filter(user=admin).values_list("tenant", "role")) == [
        (demo.pk, "admin")
    ]
    consent = ConsentForm(user=admin)
    assert consent.fields["tenant"].choices == [(demo.pk, "Demo (demo)")]
    assert consent.fields["tenant"].initial == demo.pk
    assert consent.fields["toolboxes"].choices == [
        (Tenant.objects.get(slug="demo").toolboxes.get().pk, "demo / demo")
    ]


def test_serving_refuses_a_port_another_server_answers_on(db, tmp_path):
    """make run on a port in use would print credentials for another server: refused
    before anything starts, naming the way out."""
    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    try:
        with pytest.raises(CommandError) as refused:
            call_command(
                "setup_demo",
                "--credentials",
                str(tmp_path / "demo.json"),
                "--data-dir",
                str(tenant_dir("demo") / "demo-data"),
                "--port",
                str(port),
                "--serve",
                "false",
            )
    finally:
        server.shutdown()
        server.server_close()
    assert str(refused.value) == (
        f"Port {port} is in use on 127.0.0.1 (a server answers there): stop it, or choose "
        f"another port (make run PORT={port + 1})."
    )
