"""Errors a user can fix: the command line prints them on one line, without a traceback."""


class UserError(Exception):
    """A mistake in the user's input or environment; the message says what to do."""
