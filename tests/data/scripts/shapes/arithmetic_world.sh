#!/bin/bash
# Bash arithmetic as bash computes it (truncating division, ** right-associative, -2**2 = 4).
NODES=$(( 2**3**0 + 1 ))
GBS=$(( (7 / 2) * 2**4 ))
LAYERS=$(( -2**2 * 2 ))
srun -N $NODES --ntasks-per-node 8 python pretrain_gpt.py --num-layers $LAYERS --hidden-size 1024 \
    --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 --tokenizer-type NullTokenizer \
    --vocab-size 32000 --mock-data --micro-batch-size 1 --global-batch-size $GBS --bf16 --tensor-model-parallel-size 8
