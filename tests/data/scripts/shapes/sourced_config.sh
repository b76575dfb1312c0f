#!/bin/bash
# `source` of a file beside the script: read, never run; each file named in the output.
source conf/model_small.sh
torchrun --nproc_per_node 4 --nnodes 1 pretrain_gpt.py $MODEL_ARGS \
    --vocab-size 32000 --micro-batch-size 1 --global-batch-size 16 --bf16 --tensor-model-parallel-size 4
