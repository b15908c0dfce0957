"""The SDK internals connected accounts build on (kernel/oauth_sign_in.py):
an upgrade that moves or reshapes one fails here, by name, before any sign-in breaks."""

import inspect

import pytest
from mcp.client.auth import oauth2, utils

pytestmark = pytest.mark.once

# Not in mcp.client.auth's __all__: the flow's context (its client authentication at the
# token endpoint) and the registration check the SDK runs after a dynamic registration.
PRIVATE = {
    "OAuthContext": ["self", "data", "headers"],
    "check_registration_usable": ["client_info"],
}
UTILS = {
    "build_oauth_authorization_server_metadata_discovery_urls": ["auth_server_url", "server_url"],
    "build_protected_resource_metadata_discovery_urls": ["www_auth_url", "server_url"],
    "create_client_info_from_metadata_url": ["client_metadata_url", "redirect_uris"],
    "create_client_registration_request": [
        "auth_server_metadata",
        "client_metadata",
        "auth_base_url",
    ],
    "create_oauth_metadata_request": ["url"],
    "handle_auth_metadata_response": ["response"],
    "handle_protected_resource_response": ["response"],
    "handle_registration_response": ["response"],
    "handle_token_response_scopes": ["response"],
    "is_valid_client_metadata_url": ["url"],
    "should_use_client_metadata_url": ["oauth_metadata", "client_metadata_url"],
    "validate_authorization_response_iss": ["iss", "oauth_metadata"],
    "validate_metadata_issuer": ["oauth_metadata", "expected_issuer"],
}


def parameters(function: object) -> list[str]:
    return list(inspect.signature(function).parameters)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(UTILS))
def test_the_sdk_utilities_used(name):
    assert parameters(getattr(utils, name)) == UTILS[name]


def test_the_sdk_private_names_used():
    context = oauth2.OAuthContext
    assert parameters(context.prepare_token_auth) == PRIVATE["OAuthContext"]
    fields = set(context.__dataclass_fields__)
    assert {"server_url", "client_metadata", "storage", "client_info"} <= fields
    assert parameters(oauth2.check_registration_usable) == PRIVATE["check_registration_usable"]
