"""The documentation site (Sphinx with MyST Markdown): `docs/` as pages, the README as the
home page (docs/index.md includes it). Built with warnings as errors by
tests/site/test_docs_site.py, so that a link to a missing page, anchor or file fails."""

project = "Workbench"
author = "Workbench"
extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]

# Headings up to ####  get GitHub's anchors, so `page.md#a-heading` works on the site and in
# GitHub's view of the same files; a link to an anchor that no heading makes is a warning.
myst_heading_anchors = 4
# Blocks without a language (the architecture's diagrams) are shown as they are.
highlight_language = "none"

html_theme = "furo"
html_title = "Workbench"
html_show_sourcelink = False
html_copy_source = False
# Error texts are quoted exactly: no typographic quotes or dashes in their place.
smartquotes = False
