#!/bin/bash
# A flag commented out inside a backslash continuation (written for these tests): bash ends the torchrun
# command on the comment line and runs the next line as a command of its own.
export CUDA_DEVICE_MAX_CONNECTIONS=1
NODES=1
torchrun --nproc_per_node 8 --nnodes $NODES pretrain_gpt.py \
    --tensor-model-parallel-size 2 \
    --pipeline-model-parallel-size 2 \
    # --overlap-grad-reduce \
    --num-layers 24 --hidden-size 2048 --num-attention-heads 16 \
    --seq-length 2048 --max-position-embeddings 2048 --vocab-size 50304 \
    --micro-batch-size 2 --global-batch-size 256 --bf16
