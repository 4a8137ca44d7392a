"""The answering methods, one sub-package each, and the registry the faces read.

A method is added by its folder (a `Method` in its `__init__.py`) and one line below."""

from kgqa.methods.generated_modules import remove_generated_modules_at_exit
from kgqa.methods.glow import METHOD as GLOW
from kgqa.methods.grasp import METHOD as GRASP
from kgqa.methods.kgfr import METHOD as KGFR
from kgqa.methods.llm_only import COT_METHOD as LLM_ONLY_COT, IO_METHOD as LLM_ONLY
from kgqa.methods.lmp import METHOD as LMP
from kgqa.methods.rapl import METHOD as RAPL
from kgqa.methods.text2query import METHOD as TEXT2QUERY
from kgqa.methods.registry import Method, MethodContext, Registry, Runner

remove_generated_modules_at_exit()  # the files PyG writes for the layers' propagate

REGISTRY = Registry([
    KGFR,
    LMP,
    RAPL,
    GLOW,
    GRASP,
    TEXT2QUERY,
    LLM_ONLY,
    LLM_ONLY_COT,
])


def build_runner(method: str, store, llm=None, checkpoint=None, options=None) -> Runner:  # type: ignore[no-untyped-def]
    """One runner outside an `Engine` (tests, benches): options as a dict or the method's dataclass."""
    return REGISTRY.build(method, MethodContext(store, llm, checkpoint), options)


__all__ = ["REGISTRY", "Method", "MethodContext", "Registry", "Runner", "build_runner"]
