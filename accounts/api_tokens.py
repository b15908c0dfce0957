"""A personal access token's form for the management API: `wbp_<prefix>_<secret>`.

A token is a member's own credential for `/api/v1` (never for `/mcp`, whose keys are
`wb_...` and whose OAuth tokens are `wbo_...`): its marker tells both the API and the
gateway what it is before any lookup (the rule, shared with API keys, is
`kernel.credentials`).
"""

from kernel.credentials import CredentialForm

API_TOKEN = CredentialForm("wbp_")
