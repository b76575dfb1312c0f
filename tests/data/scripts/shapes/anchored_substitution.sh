#!/bin/bash
# ${X/#pattern/repl} replaces a match at the start only, ${X/%pattern/repl} one at the end only.
CKPT=/data/runs/data/gpt
SAVE=${CKPT/#\/data/\/scratch}
LOAD=${CKPT/%gpt/base}
KEEP=${CKPT/#runs/x}
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 \
    --vocab-size 32000 --micro-batch-size 1 --global-batch-size 32 --bf16 \
    --save "$SAVE" --load "$LOAD" --tensorboard-dir "$KEEP"
