"""The cluster a launch script runs on, and the model family its entry point builds.

Why its own module: `check` takes the world size from the script when the script says it (torchrun
--nnodes/--nproc_per_node, srun/sbatch -N/--nodes with --ntasks-per-node/--gpus-per-node, #SBATCH lines) and
from --nodes/--gpus-per-node otherwise. The rule when both speak, stated once here and in docs/reading-scripts-and-configs.md:
**the command line wins**, and a warning names what the script said, so a verdict on a cluster the script does
not launch is never silent. The entry point decides the model family: only pretrain_gpt.py (and finetune
scripts that build GPTModel) are judged as GPT; BERT, T5, Mamba/hybrid, vision and multimodal entry points
are named as not modelled; pretrain_hybrid.py / pretrain_mamba.py build the hybrid models of constraints/models/mamba.py.
"""
from __future__ import annotations

import os
from typing import Optional

from constraints.megatron.launch_script import LaunchCommand

# Entry points that build megatron.core.models.gpt.GPTModel (NVIDIA/Megatron-LM @ d98e8a64): pretrain_gpt.py, and
# examples/academic_paper_scripts/detxoify_lm/finetune_gpt.py, which calls pretrain() with GPT's model_provider.
GPT_ENTRIES = ("pretrain_gpt.py", "finetune_gpt.py")
# Hybrid Mamba/attention entry points: modelled (constraints/models/mamba.py), and their match with the model is the
# `entry_script` rule there.
HYBRID_ENTRIES = ("pretrain_hybrid.py", "pretrain_mamba.py")
# Entry points whose model family shardplan does not model: script -> the family it builds.
OTHER_FAMILIES = {
    "pretrain_bert.py": "BERT (BertModel: encoder with a binary head)",
    "pretrain_t5.py": "T5 (T5Model: encoder-decoder)",
    "pretrain_retro.py": "RETRO (RetroModel: retrieval-augmented)",
    "pretrain_ict.py": "ICT (biencoder retriever)",
    "pretrain_vlm.py": "vision-language (LLaVAModel)",
    "pretrain_vision_classify.py": "vision (ViT classifier)",
    "pretrain_vision_dino.py": "vision (DINO)",
    "pretrain_vision_inpaint.py": "vision (inpainting)",
}


def entry_family_error(script: Optional[str]) -> Optional[str]:
    """One line naming the model family an entry point builds when it is not GPT; None for GPT (or unknown)."""
    if script is None:
        return None
    base = os.path.basename(script)
    if base in GPT_ENTRIES or base in HYBRID_ENTRIES:
        return None
    family = OTHER_FAMILIES.get(base)
    if family is not None:
        return (f"{base} builds a {family} model, which shardplan does not model; only GPT-style decoders "
                "(pretrain_gpt.py) are judged")
    return (f"{base} is not an entry point shardplan knows the model of; only pretrain_gpt.py (GPTModel) and "
            "pretrain_hybrid.py are judged: launch one of them with the same arguments")


def world_from_launch(launch: LaunchCommand, nodes: Optional[int], gpus_per_node: Optional[int]
                      ) -> tuple[Optional[int], Optional[int], list[str], list[str]]:
    """(nodes, GPUs per node, warnings where the command line overrides the script, warnings where a launcher's
    default sets the size): the command line's values where given, else the script's."""
    said_nodes, said_gpus = launch.num_nodes, launch.gpus_per_node
    notes = []
    for flag, cli, said in (("--nodes", nodes, said_nodes), ("--gpus-per-node", gpus_per_node, said_gpus)):
        if cli is not None and said is not None and cli != said:
            notes.append(f"the script launches {said} for {flag}, the command line says {cli}: judged with {flag} {cli} "
                         "(the command line wins)")
    defaults = []
    if gpus_per_node is None and launch.ranks_per_node_by_default:
        defaults.append("torchrun states no --nproc-per-node, so it starts 1 process per node (its default): judged "
                        "on 1 GPU per node")
    return nodes or said_nodes, gpus_per_node or said_gpus, notes, defaults
