#!/bin/bash
# Parameter expansion forms: ${X%pat} ${X##pat} ${X/a/b} ${X:-d} ${X:+alt}.
CKPT=/runs/llama/tp2_pp1.ckpt
TAG=${CKPT##*/}
TP_PART=${TAG%%_*}
TP=${TP_PART#tp}
NAME=${CKPT/llama/gpt}
torchrun --nproc_per_node ${GPUS:-8} pretrain_gpt.py --num-layers 8 --hidden-size 1024 --num-attention-heads 16 \
    --seq-length 2048 --max-position-embeddings 2048 --vocab-size 32000 --micro-batch-size 1 \
    --global-batch-size 32 --bf16 --tensor-model-parallel-size $TP --save ${NAME%.ckpt} ${SP:+--sequence-parallel}
