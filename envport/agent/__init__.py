"""The closed translation loop: a coding agent writes the translation, envport verifies it.

``envport translate`` (``loop.translate``) drives any agent backend (``backends``) module by
module through the verification hierarchy, records every iteration (``ledger``) in a git
workspace (``workspace``) and renders the run as a page (``report``).
"""

from envport.agent.backends import AgentRequest, AgentResult, Usage, make_backend
from envport.agent.loop import TranslateConfig, TranslateError, translate

__all__ = ["AgentRequest", "AgentResult", "TranslateConfig", "TranslateError", "Usage",
           "make_backend", "translate"]
