#!/bin/bash
# Backquotes and $(...) whose output check cannot know, used only in no-effect flags; world = GPUS_PER_NODE x NUM_NODES.
GPUS_PER_NODE=8
NUM_NODES=2
STAMP=`date +%s`
RUN_DIR=$(mktemp -d -t run.XXXX)
torchrun --nproc_per_node $GPUS_PER_NODE --nnodes $NUM_NODES pretrain_gpt.py \
    --num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 \
    --vocab-size 32000 --micro-batch-size 1 --global-batch-size 64 --bf16 \
    --tensor-model-parallel-size 2 \
    --tensorboard-dir $RUN_DIR/tb-`echo $STAMP` --save /ckpt/$STAMP
