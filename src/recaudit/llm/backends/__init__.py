"""LLM backends behind the :class:`recaudit.llm.Backend` protocol."""

from ._llamacpp import LlamaCppBackend
from ._local import (
    DEFAULT_GGUF_FILE,
    DEFAULT_MODEL,
    PACKAGED_MODELS,
    LocalBackend,
    PackagedModel,
    default_model_path,
    packaged_model_path,
    resolve_local_model,
)
from ._packaged import gguf_quantization

# isort: split
# -- llm-runner
from ._openai import OpenAIBackend
from ._simulated import SimulatedBackend, SimulationProfile

__all__ = [
    "DEFAULT_GGUF_FILE",
    "DEFAULT_MODEL",
    "PACKAGED_MODELS",
    "LlamaCppBackend",
    "LocalBackend",
    "PackagedModel",
    "default_model_path",
    "gguf_quantization",
    "packaged_model_path",
    "resolve_local_model",
    # llm-runner
    "OpenAIBackend",
    "SimulatedBackend",
    "SimulationProfile",
]
