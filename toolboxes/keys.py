"""An API key's form: `wb_<prefix>_<secret>` (the rule, shared with personal API tokens,
is `kernel.credentials`)."""

from kernel.credentials import CredentialForm

API_KEY = CredentialForm("wb_")
