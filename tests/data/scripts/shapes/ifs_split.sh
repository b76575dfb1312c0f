#!/bin/bash
# Splitting by IFS: an unquoted expansion under IFS=, and read -a from a here-string with its own IFS.
LIST="0.3,/data/a,,0.7,/data/b"
IFS=, read -ra BLEND <<< "$LIST"
IFS=,
SPLIT=($LIST)
unset IFS
IFS=: read -r RUN TAG <<<"gpt:tp2:pp1"
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 \
    --vocab-size 32000 --micro-batch-size 1 --global-batch-size 32 --bf16 \
    --data-path "${BLEND[@]}" --tensorboard-dir "${#SPLIT[@]}:${SPLIT[2]}:${SPLIT[3]}" \
    --wandb-exp-name "$RUN" --wandb-project "$TAG"
