#!/bin/bash
# Dense GPT in the shape of Megatron-LM's examples/gpt3 launcher (our own numbers).

export CUDA_DEVICE_MAX_CONNECTIONS=1

GPUS_PER_NODE=8
MASTER_ADDR=localhost
MASTER_PORT=6000
NUM_NODES=4
NODE_RANK=0
WORLD_SIZE=$(($GPUS_PER_NODE*$NUM_NODES))

CHECKPOINT_PATH=$1 #<checkpoint dir>
DATA_PATH=$2 #<data prefix>

DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
    --nnodes $NUM_NODES
    --master_addr $MASTER_ADDR
    --master_port $MASTER_PORT
)

GPT_MODEL_ARGS=(
    --num-layers 48
    --hidden-size 6144
    --num-attention-heads 48 # head dim 128
    --seq-length 2048
    --max-position-embeddings 2048
    --vocab-size 50257
)

TRAINING_ARGS=(
    --micro-batch-size 2
    --global-batch-size 512
    --train-iters 1000
    --lr 1.0e-4 --min-lr 1.0e-5
    --bf16
)

MODEL_PARALLEL_ARGS=(
	--tensor-model-parallel-size 4
	--pipeline-model-parallel-size 4
	--num-layers-per-virtual-pipeline-stage 3
)

DATA_ARGS=(
    --data-path $DATA_PATH
    --split 98,1,1
)

torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py \
    ${GPT_MODEL_ARGS[@]} \
    ${TRAINING_ARGS[@]} \
    ${MODEL_PARALLEL_ARGS[@]} \
    ${DATA_ARGS[@]} \
    --save $CHECKPOINT_PATH --load $CHECKPOINT_PATH
