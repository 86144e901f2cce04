"""LLM backends behind the :class:`recaudit.llm.Backend` protocol."""

from ._local import (
    DEFAULT_GGUF_FILE,
    DEFAULT_MODEL,
    PACKAGED_MODELS,
    LocalBackend,
    PackagedModel,
    default_model_path,
    packaged_model_path,
)

# isort: split
# -- llm-runner
from ._openai import OpenAIBackend
from ._simulated import SimulatedBackend, SimulationProfile

__all__ = [
    "DEFAULT_GGUF_FILE",
    "DEFAULT_MODEL",
    "PACKAGED_MODELS",
    "LocalBackend",
    "PackagedModel",
    "default_model_path",
    "packaged_model_path",
    # llm-runner
    "OpenAIBackend",
    "SimulatedBackend",
    "SimulationProfile",
]
