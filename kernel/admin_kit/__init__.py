"""What every app's admin shares, below them all: `pages` (a page in the admin's layout, the
URL of a view of one object or of a list, the object such a view is about, confirm and
act), `handoff` (a new secret shown once to the admin who made it) and `scoping` (the
per-tenant scoping mixin every ModelAdmin and inline uses, by `kernel.roles`).
"""
