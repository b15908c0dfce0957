"""What a person reads when a sign-in through an identity provider fails: one text per
cause, on our page (`accounts/sso/failed.html`), never the provider's raw answer. The
detail (which claim, which URL) goes to the log."""

from __future__ import annotations

PROVIDER_DOWN = (
    "{provider} could not be reached, so nobody can sign in with it right now. Try again in a "
    "few minutes; if it lasts, tell your Workbench operator."
)
PROVIDER_REFUSED = "{provider} did not sign you in ({error}). Start again from the login page."
STATE_UNKNOWN = (
    "This sign-in was not started on this browser, or its answer was already used. Start "
    "again from the login page."
)
WRONG_AUDIENCE = (
    "{provider} answered with an ID token meant for another application (wrong audience): "
    "nobody was signed in."
)
WRONG_ISSUER = "{provider} answered with an ID token from another issuer: nobody was signed in."
EXPIRED = (
    "{provider}'s ID token had expired: nobody was signed in. Start again from the login page."
)
BAD_SIGNATURE = (
    "{provider}'s ID token is not signed by any of its published keys (bad signature): nobody "
    "was signed in."
)
NONCE_MISMATCH = (
    "{provider}'s ID token does not belong to this sign-in (nonce mismatch): nobody was "
    "signed in. Start again from the login page."
)
TOKEN_REFUSED = (
    "{provider} did not exchange the sign-in code for tokens: nobody was signed in. Start "
    "again from the login page."
)
NO_TENANT = (
    "You signed in with {provider} as {user}, but none of your groups there ({groups}) gives "
    "you a tenant in Workbench. Ask a Workbench operator to map one of your groups to a "
    "tenant, then sign in again."
)
NO_GROUPS = "none"
PRIVILEGED_EMAIL = (
    "{provider} signed you in as {email}, but that address belongs to a privileged Workbench "
    "account (a superuser, an operator or a break-glass user), which a sign-in never takes "
    "over by e-mail: nobody was signed in. Sign in to that account with its password, or ask "
    "a Workbench operator."
)
INACTIVE = "Your Workbench account is deactivated: ask a Workbench operator."


class SignInFailed(Exception):
    """A sign-in refused: `text` for the person (a template above), `detail` for the log."""

    def __init__(self, text: str, detail: str = "", status: int = 400) -> None:
        super().__init__(detail or text)
        self.text = text
        self.detail = detail
        self.status = status
