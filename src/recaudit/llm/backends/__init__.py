"""LLM backends behind the :class:`recaudit.llm.Backend` protocol."""

from ._local import DEFAULT_GGUF_FILE, LocalBackend, default_model_path

__all__ = ["DEFAULT_GGUF_FILE", "LocalBackend", "default_model_path"]
