"""Generation engine for causal LMs: continuous batching over a paged KV cache.

Public API::

    from neural.generation import LLMEngine, AsyncLLMEngine, EngineConfig, SamplingParams
    engine = LLMEngine("models/demo-lm", EngineConfig(max_num_seqs=32))
    [out] = engine.generate(["ROMEO:"], SamplingParams(temperature=0, max_tokens=32))

Files, one job each: config (EngineConfig), sampling_params, sequence, block_manager
(paged KV cache + prefix caching), scheduler (continuous batching, preemption), attention
(paged attention), models/ (Llama family, GPT-2), model_runner, sampler, detokenizer,
engine (the step loop), async_engine (streaming), metrics (Prometheus), outputs,
register (the neural model registry's "causal-lm" entries).
"""

from .async_engine import AsyncLLMEngine
from .block_manager import BlockManager
from .config import EngineConfig
from .demo import DEMO_LM_DIR
from .engine import LLMEngine
from .metrics import EngineMetrics
from .outputs import RequestOutput, StepOutput
from .register import register_causal_lm, register_demo_lm
from .sampling_params import SamplingParams

__all__ = [
    "AsyncLLMEngine",
    "BlockManager",
    "DEMO_LM_DIR",
    "EngineConfig",
    "EngineMetrics",
    "LLMEngine",
    "RequestOutput",
    "SamplingParams",
    "StepOutput",
    "register_causal_lm",
    "register_demo_lm",
]
