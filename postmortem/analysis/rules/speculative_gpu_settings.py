"""speculative_gpu_settings: a speculative-decoding server ran out of GPU memory."""

from __future__ import annotations

from ..facts import IncidentFacts
from . import Finding, Found, rule, spec
from .common import spec_algorithm

NAME = "speculative_gpu_settings"


@rule(NAME, severity="high", requires=("incident", "config"))
def speculative_gpu_settings(f: IncidentFacts, found: Found) -> Finding | None:
    """A speculative-decoding server with GPU-memory evidence: the three settings to lower, with
    their configured values and a first step for each."""
    inc = f.incident
    algo = spec_algorithm(f)
    gpu_evidence = inc.cause == "gpu_oom" or any(
        e.kind in ("cuda_oom", "server_cuda_oom") for e in inc.evidence
    )
    if not algo or not gpu_evidence:
        return None
    cfg = f.config or {}
    return spec(NAME).finding({"algorithm": algo, **gpu_settings(cfg)})


def gpu_settings(cfg: dict[str, object]) -> dict[str, object]:
    """The GPU-memory settings as configured, and a first step down for each."""
    mfs = cfg.get("mem_fraction_static")
    bs = cfg.get("cuda_graph_max_bs")
    return {
        "fraction": mfs,
        "fraction_try": round(mfs - 0.03, 2) if isinstance(mfs, float) else None,
        "draft_tokens": cfg.get("speculative_num_draft_tokens"),
        "graph_bs": bs,
        "graph_bs_try": bs // 2 if isinstance(bs, int) and not isinstance(bs, bool) else None,
    }
