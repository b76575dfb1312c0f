#!/bin/bash
# Llama-style FP8 launcher in the shape of Megatron-LM's examples/llama script (our own numbers).
export CUDA_DEVICE_MAX_CONNECTIONS=${CUDA_DEVICE_MAX_CONNECTIONS:-1}

CHECKPOINT_PATH=${1:-"checkpoints/llama_fp8"}
DATA_ARG=${2:-"MOCK"}     # data prefix, or "MOCK"
mkdir -p "$(dirname "$CHECKPOINT_PATH")"

GPUS_PER_NODE=8
NUM_NODES=2
TP_SIZE=${TP_SIZE:-2}
CP_SIZE=2
PP_SIZE=2
NUM_LAYERS=32
DTYPE=${DTYPE:-"fp8"}
SEQ_LENGTH=8192
PRETRAIN_SCRIPT_PATH="pretrain_gpt.py"

DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
    --nnodes $NUM_NODES
)

MODEL_ARGS=(
    --num-layers $NUM_LAYERS
    --hidden-size 4096
    --ffn-hidden-size 14336
    --num-attention-heads 32
    --group-query-attention
    --num-query-groups 8
    --kv-channels 128
    --seq-length $SEQ_LENGTH
    --max-position-embeddings $SEQ_LENGTH
    --position-embedding-type rope
    --swiglu
    --normalization RMSNorm
    --untie-embeddings-and-output-weights
    --disable-bias-linear
    --vocab-size 128256
)

TRAINING_ARGS=(
    --micro-batch-size 1
    --global-batch-size $((4*32))
    --lr 0.00015   # peak
    --bf16
    --cross-entropy-loss-fusion
)

DTYPE_ARGS=()
if [[ "$DTYPE" == "fp8" ]]; then
    DTYPE_ARGS+=(
        "--fp8-format hybrid"
        "--fp8-amax-history-len 1024"
        "--fp8-param-gather"
    )
elif [[ "$DTYPE" == "mxfp8" ]]; then
    DTYPE_ARGS+=("--fp8-format e4m3" "--fp8-recipe mxfp8")
fi

MODEL_PARALLEL_ARGS=(
    --tensor-model-parallel-size $TP_SIZE
    --context-parallel-size $CP_SIZE
    --pipeline-model-parallel-size $PP_SIZE
    --sequence-parallel
)
DDP_ARGS=(
    --use-distributed-optimizer
    --overlap-grad-reduce
)
TRAINING_ARGS+=("${DDP_ARGS[@]}")

DATA_ARGS_LIST=()
if [[ "$DATA_ARG" == "MOCK" ]] || [[ -z "$DATA_ARG" ]]; then
    DATA_ARGS_LIST+=("--mock-data" "--tokenizer-type NullTokenizer")
else
    DATA_ARGS_LIST+=("--data-path $DATA_ARG" "--tokenizer-type HuggingFaceTokenizer")
fi

if [ ! -f "$PRETRAIN_SCRIPT_PATH" ]; then
    echo "pretrain_gpt.py not found"
    exit 1
fi

torchrun ${DISTRIBUTED_ARGS[@]} \
    "$PRETRAIN_SCRIPT_PATH" \
    ${MODEL_ARGS[@]} \
    ${TRAINING_ARGS[@]} \
    ${DTYPE_ARGS[@]} \
    ${MODEL_PARALLEL_ARGS[@]} \
    ${DATA_ARGS_LIST[@]} \
    --save "$CHECKPOINT_PATH"
