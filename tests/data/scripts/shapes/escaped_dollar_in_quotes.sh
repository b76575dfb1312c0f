#!/bin/bash
# A backslash in double quotes quotes $ and is removed (bash manual, "Double Quotes"): the run name holds a literal $.
RUN="exp\$1-\$HOME"
TAG="\`date\`"
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 \
    --vocab-size 32000 --micro-batch-size 1 --global-batch-size 32 --bf16 \
    --wandb-exp-name "$RUN" --wandb-project "$TAG"
