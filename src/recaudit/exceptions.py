"""The errors recaudit raises.

One base class, :class:`RecauditError`, and one subclass per kind of failure, so that
callers can catch exactly what they can handle. Messages name the offending field (a
parameter, a column, a row, a config key) and say how to fix it.
"""

from __future__ import annotations

__all__ = [
    "RecauditError",
    "InputError",
    "ConfigError",
    "EndpointError",
    "JournalError",
    "MissingExtraError",
    "RecauditWarning",
]


class RecauditError(Exception):
    """Base class of every error raised on purpose by recaudit."""


class InputError(RecauditError, ValueError):
    """Bad user data: a table, a file, a parameter value."""


class ConfigError(InputError):
    """A config file that does not parse, has unknown keys or invalid values."""


class EndpointError(RecauditError):
    """An LLM endpoint that cannot be reached or keeps failing after retries."""


class JournalError(RecauditError):
    """A run journal that cannot be opened, is locked or does not match its config."""


class MissingExtraError(RecauditError, ImportError):
    """An optional dependency is missing; the message names the extra to install."""

    def __init__(self, package: str, extra: str, command: str | None = None) -> None:
        if command is None:
            command = f"pip install 'recaudit[{extra}]'"
        super().__init__(
            f"`{package}` is required for this feature; install it with `{command}`"
        )
        self.package = package
        self.extra = extra
        self.command = command


class RecauditWarning(UserWarning):
    """Something a user should know before a result is trusted (e.g. prompts far
    beyond a model's context); the command line prints it as ``warning: ...``."""
