"""The one base class of every *input* error: text, a name or a number that a user got wrong.

``AcesUpError`` is a ``ValueError`` (so ``except ValueError`` keeps working),
and its subclasses say what kind of input was wrong: a card or deck that does
not parse (cards.py), an unknown variant (rules.py), policy or player
(policies.py, runner.py), a malformed or illegal action and a game line that
stops at one (game.py), a position that does not parse, or an argument out of
its range (``InputRangeError``: a seed, a deal index, a node limit).

Its message names the input, the place and the fix, so a shell (the command
line, a Prefect flow) can show it on one line and never retry it: the same
input fails the same way. A plain ``ValueError`` (or any other exception) is
*not* an input error: it is a bug or a failure of the machine, and the shells
show its traceback and retry it where retrying helps. The pipeline's own
input errors (``pipeline.errors.UserError``) derive from this class too.
"""

from __future__ import annotations


class AcesUpError(ValueError):
    """An input error a user can fix; the message says what was wrong and what to do."""


class InputRangeError(AcesUpError):
    """A number outside its allowed range (seed, deal index, count, node limit, samples)."""


class PositionParseError(AcesUpError):
    """A position's text (``"AS KS | 7H | - | 2C 9D"``) or shape is not one the engine can play."""
