#!/bin/bash
# Megatron-LM pre-training launch, rendered by `shardplan render` (layout of Megatron-LM examples/*/train_*.sh).
# model: Llama-3.1-8B
# hardware: h100-sxm-80gb, 1 node(s) x 8 GPU(s) = 8 ranks
# recipe: TP=2 PP=1 VPP=1 CP=1 EP=1 ETP=2 DP=4 MBS=4 GBS=16, seq 1024, bf16
# PLACEHOLDERS (4): replace each before launching (`shardplan check` warns while one is left)
#   placeholder: --megatron-path /path/to/Megatron-LM (the script's MEGATRON_PATH): replace it, or render again with --megatron-path PATH
#   placeholder: --data-path /path/to/data_text_document (the script's --data-path): replace it, or render again with --data-path PATH
#   placeholder: --tokenizer-model /path/to/tokenizer (the script's --tokenizer-model): replace it, or render again with --tokenizer-model PATH
#   placeholder: --checkpoint-dir /path/to/checkpoints (the script's --tensorboard-dir, --save, --load): replace it, or render again with --checkpoint-dir PATH
# Run this script once per node; NODE_RANK, MASTER_ADDR and MASTER_PORT come from the environment.
set -euo pipefail

# Megatron validate_args: with TP>1 or CP>1 before Blackwell, one CUDA work queue keeps comm/compute overlap ordered.
export CUDA_DEVICE_MAX_CONNECTIONS=1

DEFAULT_MEGATRON_PATH=/path/to/Megatron-LM
MEGATRON_PATH="${MEGATRON_PATH:-$DEFAULT_MEGATRON_PATH}"
GPUS_PER_NODE="${GPUS_PER_NODE:-8}"
NUM_NODES="${NUM_NODES:-1}"
NODE_RANK="${NODE_RANK:-0}"
MASTER_ADDR="${MASTER_ADDR:-localhost}"
MASTER_PORT="${MASTER_PORT:-29500}"

DISTRIBUTED_ARGS=(
    --nproc_per_node "$GPUS_PER_NODE"
    --nnodes "$NUM_NODES"
    --node_rank "$NODE_RANK"
    --master_addr "$MASTER_ADDR"
    --master_port "$MASTER_PORT"
)

MODEL_ARGS=(
    --num-layers 32
    --hidden-size 4096
    --ffn-hidden-size 14336
    --num-attention-heads 32
    --group-query-attention
    --num-query-groups 8
    --seq-length 1024
    --max-position-embeddings 131072
    --swiglu
    --normalization RMSNorm
    --disable-bias-linear
    --untie-embeddings-and-output-weights
    --position-embedding-type rope
    --rotary-base 500000
    --use-rope-scaling
    --attention-dropout 0
    --hidden-dropout 0
)

TRAINING_ARGS=(
    --micro-batch-size 4
    --global-batch-size 16
    --train-iters 500000
    --optimizer adam
    --lr 1e-4
    --min-lr 1e-5
    --lr-decay-style cosine
    --lr-warmup-iters 500
    --weight-decay 0.1
    --clip-grad 1.0
    --cross-entropy-loss-fusion
)

PARALLEL_ARGS=(
    --tensor-model-parallel-size 2
    --pipeline-model-parallel-size 1
    --sequence-parallel
    --tp-comm-overlap
    --use-distributed-optimizer
    --overlap-grad-reduce
    --overlap-param-gather
)

PRECISION_ARGS=(
    --bf16
)

DATA_ARGS=(
    --data-path /path/to/data_text_document
    --split 99,1,0
    --tokenizer-type HuggingFaceTokenizer
    --tokenizer-model /path/to/tokenizer
    --vocab-size 128256
    --make-vocab-size-divisible-by 128
)

LOGGING_ARGS=(
    --log-interval 1
    --log-throughput
    --eval-interval 1000
    --eval-iters 10
    --tensorboard-dir /path/to/checkpoints/tensorboard
)

CHECKPOINT_ARGS=(
    --save /path/to/checkpoints
    --load /path/to/checkpoints
    --save-interval 1000
)

torchrun "${DISTRIBUTED_ARGS[@]}" "$MEGATRON_PATH/pretrain_gpt.py" \
    "${MODEL_ARGS[@]}" \
    "${TRAINING_ARGS[@]}" \
    "${PARALLEL_ARGS[@]}" \
    "${PRECISION_ARGS[@]}" \
    "${DATA_ARGS[@]}" \
    "${LOGGING_ARGS[@]}" \
    "${CHECKPOINT_ARGS[@]}"
