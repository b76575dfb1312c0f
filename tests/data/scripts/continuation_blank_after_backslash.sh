#!/bin/bash
# A blank after a trailing backslash (written for these tests): bash passes one space as an argument and
# ends the command there; the next line runs as a command of its own.
export CUDA_DEVICE_MAX_CONNECTIONS=1
python -m torch.distributed.run --nproc_per_node 8 pretrain_gpt.py \
    --num-layers 24 --hidden-size 2048 --num-attention-heads 16 \
    --seq-length 2048 --max-position-embeddings 2048 --vocab-size 50304 \
    --micro-batch-size 2 --global-batch-size 256 --bf16 \  
    --tensor-model-parallel-size 2 \
    --sequence-parallel
