"""Serve a GGUF model over llama.cpp's OpenAI-compatible HTTP API (the ``llamacpp`` extra).

``python -m recaudit.llm.llamacpp_server --model smollm2-135m --port 8080`` starts
llama.cpp's own C++ server (through the prebuilt ``xllamacpp`` wheel: nothing to
compile) on ``127.0.0.1`` and keeps it up until SIGINT or SIGTERM. ``--model`` is a
packaged model name (:data:`~recaudit.llm.backends.PACKAGED_MODELS`: ``smollm2-135m``,
``gemma3-270m``; located like the ``local`` backend locates it, with the family's chat
template when the GGUF has none) or a ``.gguf`` file. It serves
``/v1/chat/completions`` with ``logprobs``/``top_logprobs`` and honours a JSON-schema
``response_format`` (grammar-constrained decoding), which is what
:class:`~recaudit.llm.backends.OpenAIBackend` needs for ``choice_probabilities`` and
``constrained`` audits; point an ``openai`` model of the audit config at
``http://127.0.0.1:PORT/v1``. ``--n-parallel`` slots decode that many requests at
once in one batch; give it the audit's ``concurrency`` (with one slot, requests in
flight wait in the server's queue), and ``--n-threads`` the CPU cores the server may
use. ``--n-ctx`` is the context of each slot (the server holds
``n_parallel * n_ctx`` tokens of KV cache). Why xllamacpp and not ``llama-cpp-python``:
``docs/decisions/``, "llama.cpp from a prebuilt wheel".

Once the server listens, one line ``listening on http://HOST:PORT`` is printed to
stdout; llama.cpp's own log goes to stderr. Bad arguments exit 2 with a one-line
message.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from .._limits import MAX_CONTEXT_TOKENS, max_threads
from ..exceptions import InputError, MissingExtraError
from .backends import PACKAGED_MODELS, packaged_model_path

__all__ = ["build_params", "main", "resolve_model"]

MSG_MODEL = ("`--model` must be a packaged model name ({names}) or a GGUF file, got "
             "{path!r} (no such file)")
MSG_POSITIVE = "`{name}` must be an integer >= 1, got {value}"
MSG_PORT = "`--port` must be in 1..65535, got {value}"
MSG_LISTENING = "listening on {address}"
#: Signals that stop the server.
STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2 (not usage + error)
        self.exit(2, f"error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m recaudit.llm.llamacpp_server",
                description="Serve a GGUF model over llama.cpp's OpenAI-compatible API.")
    p.add_argument("--model", required=True,
                   help="a packaged model name (" + ", ".join(PACKAGED_MODELS)
                   + ") or a .gguf file")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (loopback)")
    p.add_argument("--port", type=int, default=8080, help="TCP port")
    p.add_argument("--n-threads", type=int, default=1,
                   help="CPU threads (1: more spin-wait on a small shared CPU)")
    p.add_argument("--n-ctx", type=int, default=2048,
                   help="context length of each slot, in tokens")
    p.add_argument("--n-parallel", type=int, default=1,
                   help="requests decoded at once (give it the audit's concurrency)")
    return p


def resolve_model(model: str) -> tuple[Path, str | None]:
    """The GGUF file ``--model`` names, and the chat template to use (or None).

    Parameters
    ----------
    model : str
        A packaged model name (:data:`~recaudit.llm.backends.PACKAGED_MODELS`, located
        with :func:`~recaudit.llm.backends.packaged_model_path`; its chat template when
        its GGUF carries none) or the path of a GGUF file.

    Returns
    -------
    path : pathlib.Path
        The GGUF file.
    chat_template : str or None
        The packaged model's chat template when its GGUF has none, else None (the
        GGUF's own).

    Raises
    ------
    InputError
        Neither a packaged name nor a file, or the packaged model is not installed
        (the message names the pip line).

    Examples
    --------
    >>> path, template = resolve_model("smollm2-135m")  # doctest: +SKIP
    >>> path.name  # doctest: +SKIP
    'SmolLM2-135M-Instruct.Q4_1.gguf'
    """
    packaged = PACKAGED_MODELS.get(model)
    if packaged is not None:
        return packaged_model_path(model) / packaged.gguf_file, packaged.chat_template
    if not Path(model).is_file():
        raise InputError(MSG_MODEL.format(names=", ".join(PACKAGED_MODELS), path=model))
    return Path(model), None


def build_params(args: argparse.Namespace, xllamacpp: Any) -> Any:
    """The ``xllamacpp.CommonParams`` for validated command-line ``args``.

    Parameters
    ----------
    args : argparse.Namespace
        ``model`` (a packaged name or a GGUF file: :func:`resolve_model`), ``host``,
        ``port``, ``n_threads``, ``n_ctx`` (per slot), ``n_parallel``.
    xllamacpp : module
        The imported ``xllamacpp`` module.

    Returns
    -------
    xllamacpp.CommonParams
        llama.cpp splits its context over the slots (no unified KV cache), so it gets
        ``n_ctx * n_parallel`` tokens: each slot holds ``n_ctx``.
    """
    path, chat_template = resolve_model(args.model)
    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    if chat_template is not None:
        params.chat_template = chat_template
        params.use_jinja = True
    params.hostnames = [args.host]
    params.port = args.port
    params.n_ctx = args.n_ctx * args.n_parallel
    params.n_parallel = args.n_parallel
    params.cpuparams.n_threads = args.n_threads
    params.cpuparams_batch.n_threads = args.n_threads
    return params


def _check(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    try:
        resolve_model(args.model)
    except InputError as exc:
        parser.error(str(exc))
    for name in ("n_threads", "n_ctx", "n_parallel"):
        if getattr(args, name) < 1:
            parser.error(MSG_POSITIVE.format(name="--" + name.replace("_", "-"),
                                             value=getattr(args, name)))
    most, why = max_threads()
    if args.n_threads > most:
        parser.error(f"`--n-threads` must be <= {most} ({why}), got {args.n_threads}")
    most, why = MAX_CONTEXT_TOKENS
    if args.n_ctx * args.n_parallel > most:
        parser.error(f"`--n-ctx` x `--n-parallel` must be <= {most:,} ({why}), got "
                     f"{args.n_ctx} x {args.n_parallel}")
    if not 1 <= args.port <= 65535:
        parser.error(MSG_PORT.format(value=args.port))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the server until SIGINT/SIGTERM.

    Parameters
    ----------
    argv : sequence of str, optional
        Command-line arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        0 after a clean stop (bad arguments exit 2 before the server starts).
    """
    parser = _parser()
    args = parser.parse_args(argv)
    _check(args, parser)
    try:
        import xllamacpp
    except ImportError:
        parser.error(str(MissingExtraError("xllamacpp", "llamacpp")))
    # Block the stop signals before the server starts its threads (they inherit the
    # mask), then wait for one here: llama.cpp installs handlers of its own that do
    # not end an embedding process, so a plain SIGTERM would be swallowed.
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    server = xllamacpp.Server(build_params(args, xllamacpp))
    print(MSG_LISTENING.format(address=server.listening_address), flush=True)
    signal.sigwait(STOP_SIGNALS)
    del server
    return 0


if __name__ == "__main__":
    sys.exit(main())
