#!/bin/bash
# A test on a command's result is not followed: warned with its line; what it sets becomes unknown.
TP=2
if nvidia-smi | grep -q H100; then
    LOG=/fast/logs
fi
torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8 --hidden-size 1024 --num-attention-heads 16 \
    --seq-length 2048 --max-position-embeddings 2048 --vocab-size 32000 --micro-batch-size 1 \
    --global-batch-size 32 --bf16 --tensor-model-parallel-size $TP --tensorboard-dir $LOG
