"""Time a real torch training step of a reduced dense model on one device and compare it with projections.

Why: the cost table prices kernels one at a time; a real step adds launch gaps, allocator work,
casts and the optimizer's copies. This script builds a plain-torch GPT (few layers, TP=PP=1) whose
modules mirror `measure.kernels.layer_ops` shapes (norm, fused QKV, SDPA causal GQA, output projection,
fc1/activation/fc2, residual adds; embedding, final norm, output layer, cross-entropy), trains it
in bf16 with fp32 master weights and Adam (as Megatron's mixed-precision optimizer does), and prints
one JSON line: the measured step, the sum of measured kernels, and `measure.projection.project.project` with
the cost table (kernels it lacks are measured on the spot) and without it (roofline only).

    python bench/gpu_step.py --model Llama-3.1-8B --layers 4 --seq-length 4096 --device cuda \
        --hardware h200-sxm-141gb --table hardware/measured/h200-sxm-141gb.json

torch is imported inside functions; dense, non-MLA models only (MoE layers are not built here).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from constraints.spec import Activation, JobSpec, ModelSpec, Normalization, Placement, Recipe  # noqa: E402
from measure.kernels.layer_ops import LayerKind, head_ops, layer_ops, padded_vocab  # noqa: E402


def reduced_model(model: ModelSpec, num_layers: int) -> ModelSpec:
    """The same layer shapes with fewer layers; dense and non-MLA only (what build_gpt can mirror)."""
    if model.is_moe or model.multi_latent_attention:
        raise ValueError(f"--model {model.name}: gpu_step builds dense, non-MLA models only; use e.g. Llama-3.1-8B")
    return ModelSpec(**{**model.model_dump(), "num_layers": num_layers, "mtp_num_layers": 0, "layer_is_moe": None})


def build_gpt(model: ModelSpec, recipe: Recipe, dev, dtype):
    """A plain torch decoder mirroring layer_ops' kernels at TP=1 (returns an nn.Module: tokens -> loss)."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    h, nh, kv, d = model.hidden_size, model.num_attention_heads, model.num_query_groups, model.kv_channels
    norm_cls = nn.RMSNorm if model.normalization == Normalization.rmsnorm else nn.LayerNorm
    fc1_width = model.fc1_width(model.ffn_hidden_size)

    def act(x):
        if model.activation == Activation.swiglu:
            gate, up = x.chunk(2, dim=-1)
            return F.silu(gate) * up
        if model.activation == Activation.quick_geglu:  # gpt-oss (constraints/spec.py Activation)
            gate, up = x.chunk(2, dim=-1)
            if model.glu_clamp is not None:
                gate, up = gate.clamp(max=model.glu_clamp), up.clamp(-model.glu_clamp, model.glu_clamp)
            return gate * torch.sigmoid(1.702 * gate) * (up + model.glu_linear_offset)
        if model.activation == Activation.gelu:
            return F.gelu(x, approximate="tanh")
        return torch.square(F.relu(x))

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.norm2 = norm_cls(h), norm_cls(h)
            self.qkv = nn.Linear(h, (nh + 2 * kv) * d, bias=model.attention_bias)
            self.q_norm = norm_cls(d) if model.qk_layernorm else None
            self.k_norm = norm_cls(d) if model.qk_layernorm else None
            self.proj = nn.Linear(nh * d, h, bias=model.attention_bias)
            self.fc1 = nn.Linear(h, fc1_width, bias=model.mlp_bias)
            self.fc2 = nn.Linear(model.ffn_hidden_size, h, bias=model.mlp_bias)

        def forward(self, x):  # x: [b, s, h]
            b, s, _ = x.shape
            q, k, v = self.qkv(self.norm1(x)).split([nh * d, kv * d, kv * d], dim=-1)
            q, k, v = (t.view(b, s, -1, d).transpose(1, 2) for t in (q, k, v))
            if self.q_norm is not None:
                q, k = self.q_norm(q), self.k_norm(k)
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=nh != kv)
            x = x + self.proj(o.transpose(1, 2).reshape(b, s, nh * d))
            return x + self.fc2(act(self.fc1(self.norm2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            vocab = padded_vocab(model, recipe)
            self.embed = nn.Embedding(vocab, h)
            self.layers = nn.ModuleList(Layer() for _ in range(model.num_layers))
            self.norm = norm_cls(h)
            self.out = nn.Linear(h, vocab, bias=False)
            if model.tied_embeddings:
                self.out.weight = self.embed.weight

        def forward(self, tokens, targets):
            x = self.embed(tokens)
            for layer in self.layers:
                x = layer(x)
            logits = self.out(self.norm(x))
            return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))

    return GPT().to(device=dev, dtype=dtype)


def make_train_step(net, dev, seq_length: int, mbs: int):
    """One step: forward, backward, grads to fp32 masters, Adam on the masters, copy back to the model."""
    import torch

    params = [p for p in net.parameters()]
    masters = [torch.nn.Parameter(p.detach().float()) for p in params]
    fused = dev.type == "cuda"
    opt = torch.optim.Adam(masters, lr=1e-5, fused=fused, foreach=not fused)
    vocab = net.embed.num_embeddings
    tokens = torch.randint(0, vocab, (mbs, seq_length), device=dev)
    targets = torch.randint(0, vocab, (mbs, seq_length), device=dev)

    def step():
        for p in params:
            p.grad = None
        net(tokens, targets).backward()
        for m, p in zip(masters, params):
            m.grad = p.grad.float()
        opt.step()
        with torch.no_grad():
            torch._foreach_copy_(params, masters)

    return step, sum(p.numel() for p in params)


class RecordingTable:
    """Wraps a CostTable; remembers the keys a projection asked for that the table lacked."""

    def __init__(self, table, fingerprint: str):
        self.table, self.fingerprint, self.missing = table, fingerprint, []

    def lookup(self, fingerprint: str, op_key: str) -> Optional[float]:
        value = self.table.lookup(fingerprint, op_key)
        if value is None and fingerprint == self.fingerprint:
            self.missing.append(op_key)
        return value

    def fingerprints(self) -> list[str]:
        return [self.fingerprint]


def run(model_name: str, num_layers: int, seq_length: int, mbs: int, device: str, hardware: Optional[str],
        table_path: Optional[str], steps: int = 10, warmup: int = 3, reps: int = 10) -> dict:
    """Measure one reduced model's step and its projections; returns the JSON-able result."""
    import torch

    from constraints.models.load import load_model
    from measure.kernels.cost_table import CostTable
    from measure.kernels.fingerprint import device_environment, device_fingerprint, resolve_device
    from measure.kernels.measured_tables import ROOFLINE_ONLY
    from measure.microbench.kernels import measure_key, resolve_dtype
    from measure.microbench.timing import time_call

    dev = resolve_device(device)
    dtype, dtype_name = resolve_dtype("bf16", dev)
    model = reduced_model(load_model(model_name), num_layers)
    job = JobSpec(seq_length=seq_length, global_batch_size=mbs)
    recipe = Recipe(mbs=mbs)
    step, num_params = make_train_step(build_gpt(model, recipe, dev, dtype), dev, seq_length, mbs)
    timing = time_call(step, dev.type, warmup=warmup, reps=steps)

    fp, env = device_fingerprint(dev), device_environment(dev)
    table = CostTable.load(table_path, missing_ok=True) if table_path else CostTable()
    pops = layer_ops(model, job, recipe, LayerKind.dense) * num_layers + head_ops(model, job, recipe)
    result = {"model": model.name, "layers": num_layers, "seq_length": seq_length, "mbs": mbs, "dtype": dtype_name,
              "fingerprint": fp, "num_params": num_params, "measured_step_s": timing.median_s,
              "measured_step_spread_s": timing.spread_s, "tokens_per_s": mbs * seq_length / timing.median_s}

    def ensure(keys):
        for key in dict.fromkeys(keys):
            if not table.has(fp, key):
                table.add(fp, key, measure_key(key, dev, warmup=warmup, reps=reps), env)

    ensure(p.key for p in pops)
    result["kernel_sum_s"] = sum(table.lookup(fp, p.key) for p in pops)  # without the optimizer step
    if hardware is not None:
        from hardware.profile import load_profile
        from measure.projection.project import project

        profile = load_profile(hardware)
        placement = Placement(hardware=profile.name, num_nodes=1, gpus_per_node=1)
        recording = RecordingTable(table, fp)
        project(model, job, recipe, placement, profile, recording, fp)
        ensure(recording.missing)
        measured_proj = project(model, job, recipe, placement, profile, table, fp).iteration_time_s
        roofline_proj = project(model, job, recipe, placement, profile, ROOFLINE_ONLY, None).iteration_time_s
        result.update(projected_step_s=measured_proj, roofline_step_s=roofline_proj,
                      projection_error_pct=100.0 * (measured_proj - timing.median_s) / timing.median_s,
                      roofline_error_pct=100.0 * (roofline_proj - timing.median_s) / timing.median_s)
    if table_path:
        table.save(table_path)
    if dev.type == "cuda":
        result["peak_memory_bytes"] = torch.cuda.max_memory_allocated(dev)
    return result


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--seq-length", type=int, default=4096)
    parser.add_argument("--mbs", type=int, default=1)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cuda")
    parser.add_argument("--hardware", help="profile for measure.projection.project (omit to skip the projection)")
    parser.add_argument("--table", help="cost table to read and extend")
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args(argv)
    try:
        result = run(args.model, args.layers, args.seq_length, args.mbs, args.device, args.hardware, args.table, args.steps)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
