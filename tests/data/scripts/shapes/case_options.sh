#!/bin/bash
# Option parsing in the shape of examples/gptoss: a while/case loop over "$@", defaults when no option is given.
TP=2
PRECISION=bf16
while [[ $# -gt 0 ]]; do
    case $1 in
        --tp) TP="$2"; shift 2 ;;
        --fp8|--fp8-hybrid) PRECISION=fp8; shift ;;
        -h|--help) echo "usage"; exit 0 ;;
        *) echo "unknown $1"; exit 1 ;;
    esac
done
case "$PRECISION" in
    fp8*) PREC_ARGS=(--bf16 --fp8-format hybrid) ;;
    bf16) PREC_ARGS=(--bf16) ;;
esac
torchrun --nproc_per_node 8 --nnodes 1 pretrain_gpt.py \
    --num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 \
    --vocab-size 32000 --micro-batch-size 1 --global-batch-size 32 "${PREC_ARGS[@]}" \
    --tensor-model-parallel-size $TP
