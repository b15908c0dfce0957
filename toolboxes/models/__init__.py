"""The admins' configuration: tenants, their API keys, toolboxes, downstream servers, the
catalog, pinned tool definitions, tool policies and this database's installation, one
module each."""

# This database's installation: a model with its one reader (`installation_id`) beside it.
from toolboxes.installation import Installation
from toolboxes.models.catalog import (
    CatalogEntry,
    CatalogParameter,
    validate_catalog_name,
    validate_parameter_name,
)
from toolboxes.models.pins import PinState, ToolPin
from toolboxes.models.policies import PolicyDefaults, ToolPolicy
from toolboxes.models.sandbox import SandboxSettings
from toolboxes.models.servers import (
    REMOTE_TRANSPORTS,
    PinningPolicy,
    Server,
    Transport,
    default_tool_filters,
)
from toolboxes.models.sign_in import OAUTH_MODES, AuthMode, SignInSettings
from toolboxes.models.tenants import ApiKey, ApiKeyQuerySet, Tenant, Toolbox

__all__ = [
    "OAUTH_MODES",
    "REMOTE_TRANSPORTS",
    "ApiKey",
    "ApiKeyQuerySet",
    "AuthMode",
    "CatalogEntry",
    "CatalogParameter",
    "Installation",
    "PinState",
    "PinningPolicy",
    "PolicyDefaults",
    "SandboxSettings",
    "Server",
    "SignInSettings",
    "Tenant",
    "ToolPin",
    "ToolPolicy",
    "Toolbox",
    "Transport",
    "default_tool_filters",
    "validate_catalog_name",
    "validate_parameter_name",
]
