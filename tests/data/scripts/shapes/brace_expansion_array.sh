#!/bin/bash
# Brace expansion in an array and in arguments: a list and a zero-padded sequence.
DATA=(--data-path 0.5 /data/shard_{00..02}_text_document)
CKPT=(--{save,load} /ckpt)
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 \
    --vocab-size 32000 --micro-batch-size 1 --global-batch-size 32 --bf16 \
    "${DATA[@]}" "${CKPT[@]}" --split 9{9,},1,0
