#!/bin/bash
# `sbatch <<EOF`: the job script is the here-document; its #SBATCH lines give the world.
TRAINING_CMD="python pretrain_gpt.py --num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 \
 --max-position-embeddings 2048 --tokenizer-type HuggingFaceTokenizer --tokenizer-model meta-llama/Llama-3.1-8B \
 --micro-batch-size 1 --global-batch-size 64 --bf16 --tensor-model-parallel-size 4"
mkdir -p logs || {
    echo "cannot create logs"
    exit 1
}
sbatch <<EOF
#!/bin/bash
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=8
srun --mpi=pmix -l bash -x -c "${TRAINING_CMD}" 2>&1 | tee logs/\${SLURM_JOB_ID}.log
EOF
