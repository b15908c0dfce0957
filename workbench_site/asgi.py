"""The one ASGI callable: `/mcp` to the gateway, everything else to Django.

It owns the ASGI lifespan (Django's handler refuses lifespan scopes): the MCP session
manager and the downstream pool are entered and left here, in one task, so
`uvicorn workbench_site.asgi:application` is the whole server and shutdown leaves no
child process behind.
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "workbench_site.settings")
django_app = get_asgi_application()

from workbench_site.gateway_app import build_application  # noqa: E402 - needs Django set up

application = build_application(django_app)
