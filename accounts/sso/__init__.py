"""Single sign-on with OpenID Connect: people sign in to the admin and to the OAuth consent
page with their company's identity provider, whose groups decide their memberships.

`providers` (the settings), `http` (every request of the flow, through the egress policy),
`discovery` (metadata and keys, cached, keys refetched on rotation), `id_tokens` (the
checks of an ID token and of a logout token), `failures` (the texts a person reads),
`group_mapping` (groups to memberships), `identities` (who signed in, created on first
sign-in; never a privileged account by e-mail), `sessions` (ending a person's sessions,
grants and API tokens; or one provider session's admin sessions), `views` (login,
callback), `logout_views` (the provider's back- and front-channel logouts), `recheck`
(the bounded re-check of providers without logout), `login_form` (local passwords off).
"""
