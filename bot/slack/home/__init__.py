"""opsbot's App Home in Slack: the Messages tab's suggested prompts (prompts.py), and the Home
tab (contents.py: what it shows, for whom; views.py: as Block Kit; usable.py: what a person may
use of the policy), published and clicked on through tab.py."""

from .contents import Contents
from .tab import HomeTab

__all__ = ["Contents", "HomeTab"]
