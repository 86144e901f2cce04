"""API keys never in a setting: the check every audit config passes first.

A config names the VARIABLE that holds a key (``api_key_env``); a setting that holds
the key itself (pasted into a URL, a path, a model name, ...) would be written to the
run folder, ``run.json`` and reports, so it is refused before any other check can
quote it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..exceptions import ConfigError
from ..llm.backends import looks_like_key

__all__ = ["MSG_SECRET_IN_FIELD", "refuse_secrets"]

MSG_SECRET_IN_FIELD = (
    "`{field}` holds the API key of {origin}; a key belongs in the environment only "
    "(the config names its variable with `api_key_env`), never in a setting, which is "
    "written to the run folder, run.json and reports: remove it from `{field}`"
)
#: Keys shorter than this are not searched for in the other settings (too many
#: innocent matches).
MIN_SECRET_LEN = 8


def _secrets_of(data: Mapping[str, Any]) -> dict[str, str]:
    """The API keys a raw config refers to, each with where it comes from: the value
    of each variable named by a model's ``api_key_env``, and an ``api_key_env`` value
    that is a pasted key rather than a variable name."""
    secrets: dict[str, str] = {}
    models = data.get("models")
    for i, t in enumerate(models if isinstance(models, list) else []):
        env = t.get("api_key_env") if isinstance(t, Mapping) else None
        if not isinstance(env, str) or not env:
            continue
        hidden = looks_like_key(env)
        origin = f"the variable named by `models[{i}].api_key_env`" if hidden \
            else f"`{env}`"
        value = os.environ.get(env) if not hidden or env.isidentifier() else None
        if value and len(value) >= MIN_SECRET_LEN:
            secrets[value] = origin
        if hidden and len(env) >= MIN_SECRET_LEN:
            secrets[env] = f"`models[{i}].api_key_env` (a key, not a variable name)"
    return secrets


def _strings(value: Any, where: str) -> list[tuple[str, str]]:
    """``(setting, text)`` for every string in a raw config (keys of tables included;
    array items as ``name[i]``)."""
    if isinstance(value, str):
        return [(where, value)]
    out: list[tuple[str, str]] = []
    if isinstance(value, Mapping):
        for k, v in value.items():
            name = f"{where}.{k}" if where else str(k)
            out += [(name, str(k))] + _strings(v, name)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _strings(v, f"{where}[{i}]")
    return out


def refuse_secrets(data: Mapping[str, Any]) -> None:
    """A :class:`ConfigError` when any setting holds an API key the config refers to
    (the message names the setting, never the key). Runs before any other check, so
    no later message can quote a setting that holds a key."""
    secrets = _secrets_of(data)
    if not secrets:
        return
    for where, text in _strings(data, ""):
        if where.endswith("].api_key_env"):
            continue  # the variable's NAME (a pasted key there is refused on its own)
        for secret, origin in secrets.items():
            if secret in text:
                raise ConfigError(MSG_SECRET_IN_FIELD.format(field=where, origin=origin))
