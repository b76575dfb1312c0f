#!/bin/bash
# A whole loop with an if on one line, and `else CMD` on the else's own line.
for n in 1 2 4; do if [ $n -gt 1 ]; then TP=$n; else PP=$n; fi; done
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 \
    --vocab-size 32000 --micro-batch-size 1 --global-batch-size 32 --bf16 \
    --tensor-model-parallel-size $TP --pipeline-model-parallel-size $PP
