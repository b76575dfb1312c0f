#!/bin/bash
# `local` belongs to the function call: the caller's TP and PP come back when it returns (bash's dynamic scope),
# while a callee sees the local.
TP=1
PP=1
show_tp() { SEEN=$TP; }
pick() {
    local TP=4
    local PP
    PP=2
    show_tp
}
pick
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 \
    --vocab-size 32000 --micro-batch-size 1 --global-batch-size 32 --bf16 \
    --tensor-model-parallel-size $TP --pipeline-model-parallel-size $PP --expert-model-parallel-size ${SEEN}
