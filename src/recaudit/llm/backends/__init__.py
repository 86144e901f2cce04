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
from ._batching import describe_backend
from ._factory import (
    LOCAL_ENGINES,
    EndpointConfig,
    LocalParams,
    OpenAIParams,
    SimulatedParams,
    build_backends,
)
from ._openai import OpenAIBackend, check_base_url, check_key_env, looks_like_key
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
    "LOCAL_ENGINES",
    "LocalParams",
    "EndpointConfig",
    "OpenAIBackend",
    "OpenAIParams",
    "SimulatedBackend",
    "SimulatedParams",
    "SimulationProfile",
    "build_backends",
    "check_base_url",
    "check_key_env",
    "describe_backend",
    "looks_like_key",
]
