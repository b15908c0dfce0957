"""Create (idempotently) the demo tenant, toolbox, API key and admin login for `make run`.

The admin is an operator and also an admin of the demo tenant: signing a client in with
OAuth (the README's "Connect from Claude.ai or ChatGPT") picks a tenant the user administers,
and an operator who is a member of none could not finish it.

The demo key and admin password exist in plain text only in `.demo-credentials.json`
(mode 0600, git-ignored) so that repeated runs print the same working credentials.

With `--serve COMMAND...` (make run) it then runs the server in the foreground and prints
"Workbench demo is ready." with the credentials only once the server answers.
"""

import argparse
import json
import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connections, transaction

from accounts.members import add_member
from kernel.roles import ADMIN
from mcp_gateway import tenant_endpoint, toolbox_endpoint
from toolboxes.catalog.entries import load_default_catalog
from toolboxes.models import ApiKey, Server, Tenant, Toolbox
from workbench_site.management import checkout, foreground

CREDENTIALS_FILE = "demo-credentials.json"
DEMO_SLUG = "demo"
DEMO_TOOLBOX = "demo"
ADMIN_USERNAME = "admin"
READY = "Workbench demo is ready."
GIT_READ_ONLY_TOOLS = ["git_status", "git_log", "git_diff", "git_show", "git_branch"]


class Command(BaseCommand):
    help = "Create the demo tenant, toolbox, API key and admin user (idempotent)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", default="8000")
        parser.add_argument(
            "--data-dir",
            default=str(checkout.checkout_dir()),
            help="Where the demo's git repository is made: this checkout's own directory "
            "outside it (no sandboxed server may see the project directory).",
        )
        parser.add_argument(
            "--credentials",
            default=str(Path(settings.BASE_DIR) / f".{CREDENTIALS_FILE}"),
            help="Where the demo key and admin password are kept between runs.",
        )
        parser.add_argument(
            "--serve",
            nargs=argparse.REMAINDER,
            metavar="COMMAND",
            help="Then run this server (every argument after --serve) in the foreground, "
            "and print the demo's credentials once it answers on --host and --port.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        host, port = options["host"], options["port"]
        if options["serve"] and foreground.answers(host, int(port)):
            raise CommandError(
                f"Port {port} is in use on {host} (a server answers there): stop it, or "
                f"choose another port (make run PORT={int(port) + 1})."
            )
        path = Path(options["credentials"])
        saved: dict[str, str] = json.loads(path.read_text()) if path.exists() else {}
        try:
            repo = self._demo_repository(Path(options["data_dir"]))
        except checkout.NotOwnDirectory as exc:
            raise CommandError(str(exc)) from exc
        with transaction.atomic():
            load_default_catalog()  # the shipped catalog entries the operator lacks
            tenant = self._demo_tenant(repo)
            api_key = self._demo_key(tenant, saved.get("api_key", ""))
            password = self._admin_password(saved.get("admin_password", ""))
            add_member(tenant, ADMIN_USERNAME, ADMIN)  # the OAuth sign-in's tenant
        saved.update(api_key=api_key, admin_username=ADMIN_USERNAME, admin_password=password)
        path.write_text(json.dumps(saved, indent=2) + "\n")
        os.chmod(path, 0o600)
        if not options["serve"]:
            self._print(api_key, password, host, port, "Workbench demo is set up.")
            return
        connections.close_all()  # the server opens its own
        status = foreground.serve(
            options["serve"],
            host,
            int(port),
            lambda: self._print(api_key, password, host, port),
        )
        if status:
            raise SystemExit(status)  # the server said why

    def _demo_repository(self, data_dir: Path) -> Path:
        """A small git repository for the git server, made once, readable by everyone
        (the demo tenant's servers run under a uid of their own)."""
        if data_dir.parent == checkout.run_root():
            checkout.own_directory(data_dir.parent)
        checkout.own_directory(data_dir)
        repo = data_dir / "repo"
        if not (repo / ".git").is_dir():
            repo.mkdir(exist_ok=True, mode=0o755)
            (repo / "README.md").write_text(
                "# Workbench demo repository\n\nThe demo's git server sees only this.\n"
            )
            git = [
                "git",
                "-C",
                str(repo),
                "-c",
                "user.name=Workbench",
                "-c",
                "user.email=demo@localhost",
            ]
            subprocess.run([*git, "init", "-q"], check=True)
            subprocess.run([*git, "add", "README.md"], check=True)
            subprocess.run([*git, "commit", "-q", "-m", "Demo repository"], check=True)
        repo.chmod(0o755)
        return repo

    def _demo_tenant(self, repo: Path) -> Tenant:
        tenant, _ = Tenant.objects.get_or_create(slug=DEMO_SLUG, defaults={"name": "Demo"})
        toolbox, _ = Toolbox.objects.get_or_create(
            tenant=tenant,
            name=DEMO_TOOLBOX,
            defaults={"description": "Demo tools that need no network: time and git (read-only)"},
        )
        python = sys.executable
        servers: dict[str, dict[str, Any]] = {
            "time": {"command": python, "args": ["-m", "mcp_server_time"]},
            "git": {
                "command": python,
                "args": ["-m", "mcp_server_git", "--repository", str(repo)],
                "mounts": [{"path": str(repo)}],  # read-only
                "tool_filters": GIT_READ_ONLY_TOOLS,
            },
        }
        for position, (name, fields) in enumerate(servers.items()):
            server = Server.objects.filter(toolbox=toolbox, name=name).first()
            if server is None:
                server = Server(toolbox=toolbox, name=name, position=position)
            for field, value in fields.items():  # older demos pointed git at the project
                setattr(server, field, value)
            server.full_clean()
            server.save()
        return tenant

    def _demo_key(self, tenant: Tenant, saved_key: str) -> str:
        prefix = saved_key.split("_")[1] if saved_key.count("_") >= 2 else ""
        existing = ApiKey.objects.usable().filter(tenant=tenant, prefix=prefix).first()
        if existing is not None and existing.matches(saved_key):
            return saved_key
        _, full_key = ApiKey.issue(tenant, label="demo (make run)")
        return full_key

    def _admin_password(self, saved_password: str) -> str:
        user_model = get_user_model()
        user = user_model.objects.filter(username=ADMIN_USERNAME).first()
        if user is None:
            password = secrets.token_urlsafe(12)
            user_model.objects.create_superuser(ADMIN_USERNAME, "", password)
            return password
        if saved_password and user.check_password(saved_password):
            return saved_password
        return "(unchanged: set one with `manage.py changepassword admin`)"

    def _print(
        self, api_key: str, password: str, host: str, port: str, headline: str = READY
    ) -> None:
        base = f"http://{host}:{port}"
        endpoint = tenant_endpoint(f"{base}/mcp", DEMO_SLUG)
        one_toolbox = toolbox_endpoint(f"{base}/mcp", DEMO_SLUG, DEMO_TOOLBOX)
        client_config = {
            "mcpServers": {
                "workbench": {
                    "type": "http",
                    "url": endpoint,
                    "headers": {"Authorization": f"Bearer {api_key}"},
                }
            }
        }
        self.stdout.write(
            "\n".join(
                [
                    "",
                    headline,
                    f"  Admin:        {base}/admin/  (user: admin, password: {password})",
                    f"  MCP endpoint: {endpoint}  (the tenant's own; {base}/mcp serves too)",
                    f"  Demo API key: {api_key}",
                    f"  Toolbox endpoint: {one_toolbox}  (the demo toolbox as a server of its own)",
                    "",
                    "Claude Code, the demo toolbox's tools as its own:",
                    f"  claude mcp add --transport http workbench-{DEMO_TOOLBOX} {one_toolbox} "
                    f'--header "Authorization: Bearer {api_key}"',
                    "",
                    "Paste into an MCP client's configuration:",
                    json.dumps(client_config, indent=2),
                    "",
                    "Or try it from Python, with this project's .venv:",
                    "",
                    ".venv/bin/python - <<'PY'",
                    "import asyncio, httpx2",
                    "from mcp.client.session import ClientSession",
                    "from mcp.client.streamable_http import streamable_http_client",
                    "async def main():",
                    f"    headers = {{'Authorization': 'Bearer {api_key}'}}",
                    "    timeout = httpx2.Timeout(30, read=300)  # a cold server starts in seconds",
                    "    async with httpx2.AsyncClient(headers=headers, timeout=timeout)"
                    " as http, \\",
                    f"            streamable_http_client('{endpoint}', http_client=http)"
                    " as (read, write), ClientSession(read, write) as session:",
                    "        print((await session.initialize()).instructions)",
                    "        print(await session.call_tool('open_toolbox',"
                    f" {{'toolbox': '{DEMO_TOOLBOX}'}}))",
                    "asyncio.run(main())",
                    "PY",
                    "",
                ]
            )
        )
        self.stdout.flush()
