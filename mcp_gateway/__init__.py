"""The clients' world: the MCP endpoint, its meta-tools and the downstream pool."""

from importlib.metadata import version

__version__ = version("workbench")  # one home: pyproject.toml
