#!/bin/bash
# A function that builds part of the argument list from its parameters, a for loop, unset and elif.
add_parallel() {
    local tp=$1
    PAR_ARGS=(--tensor-model-parallel-size $tp --pipeline-model-parallel-size $2)
    return 0
    PAR_ARGS=(--tensor-model-parallel-size 99)
}
EXTRA=()
for flag in --use-distributed-optimizer --overlap-grad-reduce; do
    EXTRA+=($flag)
done
DEBUG=1
unset DEBUG
if [[ -n "$DEBUG" ]]; then
    MBS=4
elif [[ "$EXTRA" == --use-* ]]; then
    MBS=2
else
    MBS=1
fi
add_parallel 2 2
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 \
    --vocab-size 32000 --micro-batch-size $MBS --global-batch-size 32 --bf16 "${PAR_ARGS[@]}" ${EXTRA[@]}
