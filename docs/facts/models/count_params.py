# Usage: python count_params.py [Name ...]   (torch==2.13.0 CPU + transformers)
# Instantiates each <Name>.json on the meta device and prints exact parameter counts.
import json, sys, glob, os, copy, warnings
warnings.filterwarnings("ignore")
import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM, CONFIG_MAPPING
from transformers.utils import logging as hl
hl.set_verbosity_error()

# the bundled HF configs live in constraints/models/ (this script sits in docs/facts/models/)
D = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "constraints", "models", "hf_configs")
names = sys.argv[1:] or sorted(os.path.basename(p)[:-5] for p in glob.glob(f"{D}/*.json"))

def load_cfg(raw):
    d = copy.deepcopy(raw)
    for k in ("quantization_config", "auto_map", "_name_or_path", "_comment"):
        d.pop(k, None)
    mt = d.pop("model_type")
    if mt == "kimi_k2":
        mt = "deepseek_v3"   # Kimi-K2 ships DeepseekV3ForCausalLM remote code; same module structure
    return CONFIG_MAPPING[mt](**d), mt

def get(raw, *keys, default=None):
    for k in keys:
        if k in raw and raw[k] is not None:
            return raw[k]
    return default

out = {}
for n in names:
    raw = json.load(open(f"{D}/{n}.json"))
    cfg, mt = load_cfg(raw)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg)
    total = sum(p.numel() for p in model.parameters())  # dedups tied params
    emb_in = model.get_input_embeddings().weight.numel()
    out_emb = model.get_output_embeddings()
    tied = out_emb is not None and out_emb.weight is model.get_input_embeddings().weight
    emb_out = 0 if tied else out_emb.weight.numel()
    pos_emb = 0
    for name, p in model.named_parameters():
        if name.endswith("wpe.weight"):
            pos_emb += p.numel()
    non_emb = total - emb_in - emb_out - pos_emb
    # routed experts: params under an `.experts.` module, excluding shared experts
    routed = 0; routed_layers = set(); names_seen = set()
    for name, p in model.named_parameters():
        if ".experts." in name and "shared" not in name:
            routed += p.numel()
            routed_layers.add(name.split(".experts.")[0])
            names_seen.add(name.split(".experts.")[1].split(".")[-2 if name.split(".experts.")[1].split(".")[0].isdigit() else 0])
    n_exp = get(raw, "n_routed_experts", "num_local_experts", "num_experts")
    topk = get(raw, "num_experts_per_tok", "experts_per_token")
    if routed:
        per_layer = routed // len(routed_layers)
        per_expert = per_layer // n_exp
        assert per_expert * n_exp == per_layer, (n, per_layer, n_exp)
        inactive = per_expert * (n_exp - topk) * len(routed_layers)
        active = total - inactive
    else:
        per_expert = 0; active = total
    out[n] = dict(
        model_type=raw["model_type"], hf_class=type(model).__name__,
        total_params=total, non_embedding_params=non_emb,
        active_params=active if routed else None,
        active_non_embedding_params=(active - emb_in - emb_out - pos_emb) if routed else None,
        input_embedding_params=emb_in, output_embedding_params=emb_out, position_embedding_params=pos_emb,
        tied_embeddings=bool(tied),
        layers=get(raw, "num_hidden_layers", "n_layer"), hidden=get(raw, "hidden_size", "n_embd"),
        heads=get(raw, "num_attention_heads", "n_head"),
        kv_heads=get(raw, "num_key_value_heads", default=get(raw, "num_attention_heads", "n_head")),
        head_dim=get(raw, "head_dim"),
        ffn=get(raw, "intermediate_size", "n_inner"), moe_ffn=get(raw, "moe_intermediate_size", default=(raw.get("intermediate_size") if routed else None)),
        n_routed_experts=n_exp if routed else None, top_k=topk if routed else None,
        n_shared_experts=get(raw, "n_shared_experts") if routed else None,
        moe_layers=len(routed_layers) if routed else 0,
        params_per_routed_expert=per_expert if routed else None,
        vocab=get(raw, "vocab_size"), max_position_embeddings=get(raw, "max_position_embeddings", "n_positions"),
        transformers_version=transformers.__version__,
    )
    print(n, json.dumps(out[n]), flush=True)
    del model
json.dump(out, open(os.environ.get("COUNTS_OUT", "param_counts.json"), "w"), indent=2)
