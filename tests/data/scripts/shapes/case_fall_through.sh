#!/bin/bash
# `;&` runs the next arm's commands without testing it; `;;&` goes on testing the arms below.
SIZE=small
case $SIZE in
    small) TP=2 ;&
    medium) PP=2 ;;
    *) PP=8 ;;
esac
case $SIZE in
    s*) MBS=1 ;;&
    *all) GBS=64 ;;&
    large) GBS=128 ;;
esac
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 \
    --vocab-size 32000 --micro-batch-size $MBS --global-batch-size $GBS --bf16 \
    --tensor-model-parallel-size $TP --pipeline-model-parallel-size $PP
