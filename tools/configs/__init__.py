"""read_config: a file of one of the operator's config roots, whole or one key of it, or a listing.

The modules: confined (the walk that opens nothing outside a root), formats (parsing and dotted
keys), read (the tool: what was opened, redacted and answered). The rest of opsbot imports the
tool from here.
"""

from .read import read_config_tool

__all__ = ["read_config_tool"]
