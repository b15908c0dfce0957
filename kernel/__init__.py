"""The shared kernel: small rules every app uses, importing no app.

`redaction` (secret values out of logs and the call log), `pins` (the pin rule: a tool's
definition, its digest, which tools wait for an admin), `headers` (what no configuration
may set on a request), `masking` (how a secret is shown to an admin), `incidents` (the id
joining a client's short reason to the log line with the whole story), `roles` (who may
do what in which tenant, and the roles' names), `crypto` (secrets encrypted at rest),
`credentials` (an API key's and a personal API token's form, hash and issue),
`admin_kit` (what every app's admin shares: pages, hand-off, scoping), `tenant_paths` and
`named_paths` (which host paths a sandboxed server may be shown: the admin's validation and
each spawn check by them), `store_names` (the shared store's entry prefix per installation,
and which store a process uses), `classified` (a failure's two voices: the client's phrase,
the log's detail), `egress` (where an outbound request may go: resolve, check, pin),
`oauth_sign_in` (the OAuth client that signs people in to remote servers, on the SDK's:
connected accounts' sign-ins and refreshes). Apps import it; it imports none of them
(tests/gateway/test_arrows.py holds this).
"""
