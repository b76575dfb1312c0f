#!/bin/bash
# An entry point that does not build a GPT model: named, not judged as GPT.
torchrun --nproc_per_node 8 pretrain_bert.py --num-layers 24 --hidden-size 1024 --num-attention-heads 16 \
    --seq-length 512 --max-position-embeddings 512 --micro-batch-size 4 --global-batch-size 32 --bf16 \
    --vocab-file /data/bert-vocab.txt
