#!/bin/bash
# Flags Megatron does not define and a stray value: Megatron's argparse exits; an illegal verdict, not a pass.
torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8 --hidden-size 1024 --num-attention-heads 16 \
    --seq-length 2048 --max-position-embeddings 2048 --vocab-size 32000 --micro-batch-size 1 \
    --global-batch-size 32 --bf16 --DDP-impl local --checkpoint-activations 7
