#!/bin/bash
# A job script whose #SBATCH lines are not all above its first command (written for these tests).
#SBATCH --job-name=gpt-1b
#SBATCH --nodes=2

#SBATCH --ntasks-per-node=8
  #SBATCH --time=04:00:00
set -e
#SBATCH --nodes=4
export CUDA_DEVICE_MAX_CONNECTIONS=1
cat > job_notes.txt <<NOTES
#SBATCH --nodes=16 was the first try
NOTES
    #SBATCH --ntasks-per-node=4
srun python pretrain_gpt.py --num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 \
    --max-position-embeddings 2048 --vocab-size 50304 --micro-batch-size 2 --global-batch-size 256 --bf16 \
    --tensor-model-parallel-size 2 --sequence-parallel
