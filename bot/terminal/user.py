"""Who the terminal's user is: whoever runs the process. The OS account is the identity policy
sees (`cli` platform), for access rules and for approvals alike."""

from __future__ import annotations

import getpass

from ...config.policy import Principal

TERMINAL_USER = Principal(platform="cli", user=getpass.getuser())
