#!/bin/bash
#SBATCH --nodes=16
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-node=8
set -euo pipefail
export CUDA_DEVICE_MAX_CONNECTIONS=1
ARGS="--num-layers 61 --hidden-size 7168 --num-attention-heads 128 --seq-length 4096 --max-position-embeddings 163840"
ARGS="$ARGS --vocab-size 129280 --micro-batch-size 1 --global-batch-size 1024 --bf16"
srun --container-image=nvcr.io/x --mpi=pmix python -u pretrain_gpt.py $ARGS \
    --tensor-model-parallel-size 2 --pipeline-model-parallel-size 8 \
    --pipeline-model-parallel-layout "Et|(tt|)*29,tt|L" \
    --recompute-granularity full --recompute-method uniform --recompute-num-layers 1
