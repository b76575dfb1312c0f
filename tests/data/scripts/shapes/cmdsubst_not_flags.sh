#!/bin/bash
# Text inside $(...) is never read as flags: `pick_dir --num-layers 400` is an unknown value, not the model depth.
pick_dir() { echo "/logs/$1"; }
python pretrain_gpt.py --num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 \
    --max-position-embeddings 2048 --vocab-size 32000 --micro-batch-size 1 --global-batch-size 16 --bf16 \
    --tensorboard-dir "$(pick_dir --num-layers 400)"
