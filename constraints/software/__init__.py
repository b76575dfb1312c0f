"""Software as an input: which generation of the Megatron stack a run uses, and what that generation can do.

Why here (constraints/, beside the recipe spec): a software generation decides which recipe knobs exist and how they
run. 2021-era Megatron-LM has no Transformer Engine and no flash attention (core attention is torch.baddbmm and apex's
fused softmax), no sequence parallelism, no distributed optimizer and no overlapped gradient reduction; DeepEP, the
Hybrid-EP backend, CUDA graphs and expert-parallel overlap arrive years later. Each generation is mapped onto the
recipe knobs the projection already prices (`apply`), so a 2021 run is slower by the mechanism (unfused attention,
DDP without overlap), never by a constant.

- generations.yaml: the data, one source per fact (feature -> the month it landed; releases -> their month).
- generation.py: `STACK:VERSION` (bench/data/COLUMNS.md's `software` column) -> a `Generation` (its month and features).
- apply.py: a generation applied to a recipe (knobs set, contradictions refused in one line) and to solve's pins.
- versions.py: the versions a Megatron log prints -> `STACK:VERSION`.
"""
