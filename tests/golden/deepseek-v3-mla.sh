#!/bin/bash
# Megatron-LM pre-training launch, rendered by `shardplan render` (layout of Megatron-LM examples/*/train_*.sh).
# model: DeepSeek-V3
# hardware: h100-sxm-80gb, 128 node(s) x 8 GPU(s) = 1024 ranks
# recipe: TP=2 PP=8 layout Et*3|(tt|)*29,m|L CP=1 EP=64 ETP=1 DP=64 MBS=1 GBS=8192, seq 4096, fp8-blockwise
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
NUM_NODES="${NUM_NODES:-128}"
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
    --num-layers 61
    --hidden-size 7168
    --ffn-hidden-size 18432
    --num-attention-heads 128
    --multi-latent-attention
    --q-lora-rank 1536
    --kv-lora-rank 512
    --qk-head-dim 128
    --qk-pos-emb-head-dim 64
    --v-head-dim 128
    --seq-length 4096
    --max-position-embeddings 163840
    --swiglu
    --normalization RMSNorm
    --disable-bias-linear
    --untie-embeddings-and-output-weights
    --position-embedding-type rope
    --rotary-base 10000
    --attention-dropout 0
    --hidden-dropout 0
    --mtp-num-layers 1
)

TRAINING_ARGS=(
    --micro-batch-size 1
    --global-batch-size 8192
    --train-iters 500000
    --optimizer adam
    --lr 1e-4
    --min-lr 1e-5
    --lr-decay-style cosine
    --lr-warmup-iters 500
    --weight-decay 0.1
    --clip-grad 1.0
    --cross-entropy-loss-fusion
    --recompute-granularity selective
    --recompute-modules mla_up_proj moe_act
)

PARALLEL_ARGS=(
    --tensor-model-parallel-size 2
    --pipeline-model-parallel-size 8
    --pipeline-model-parallel-layout 'Et*3|(tt|)*29,m|L'
    --expert-model-parallel-size 64
    --expert-tensor-parallel-size 1
    --sequence-parallel
    --use-distributed-optimizer
    --overlap-grad-reduce
    --overlap-param-gather
)

MOE_ARGS=(
    --num-experts 256
    --moe-router-topk 8
    --moe-ffn-hidden-size 2048
    --moe-shared-expert-intermediate-size 2048
    --moe-layer-freq '([0]*3+[1]*58)'
    --moe-router-num-groups 8
    --moe-router-group-topk 4
    --moe-router-score-function sigmoid
    --moe-router-enable-expert-bias
    --moe-router-load-balancing-type seq_aux_loss
    --moe-aux-loss-coeff 1e-4
    --moe-grouped-gemm
    --moe-token-dispatcher-type alltoall
)

PRECISION_ARGS=(
    --bf16
    --fp8-format e4m3
    --fp8-recipe blockwise
)

DATA_ARGS=(
    --data-path /path/to/data_text_document
    --split 99,1,0
    --tokenizer-type HuggingFaceTokenizer
    --tokenizer-model /path/to/tokenizer
    --vocab-size 129280
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
    "${MOE_ARGS[@]}" \
    "${PRECISION_ARGS[@]}" \
    "${DATA_ARGS[@]}" \
    "${LOGGING_ARGS[@]}" \
    "${CHECKPOINT_ARGS[@]}"
