"""The management API (`/api/v1/`): what the admin does, over HTTP, described by OpenAPI.

Built with django-ninja: typed views and pydantic schemas from which the OpenAPI 3.1
document is derived. It reaches the admins' world through `toolboxes.models` and
`toolboxes.config_file`, people through `accounts`, and the gateway only through its public
face (`mcp_gateway`).
"""
