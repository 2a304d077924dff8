"""Errors a user can fix: the command line prints them on one line, without a traceback.

Every input error of the project derives from ``engine_rs_free.errors.AcesUpError``
(a ``ValueError``): the engine's (malformed deck, unknown variant or player,
illegal action) and the pipeline's ``UserError`` (bad spec, unwritable folder,
unreachable cluster, locked data folder). The command line and the Prefect
flows treat exactly that family as the user's to fix (one line, no retry);
anything else is a bug or a machine failure and keeps its traceback.
"""

from engine_rs_free.errors import AcesUpError


class UserError(AcesUpError):
    """A mistake in the user's input or environment; the message says what to do."""


__all__ = ["AcesUpError", "UserError"]
