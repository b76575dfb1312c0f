#!/bin/bash
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=8
# The command kept in a here-document and run by `srun bash -c "$CMD"`; a here-doc that only documents a
# launch line (notes.txt) is never taken as the launch.
cat > notes.txt <<'NOTES'
torchrun pretrain_gpt.py --num-layers 400
NOTES
TP=2
CMD=$(cat <<EOF
python -u pretrain_gpt.py --num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 \
  --max-position-embeddings 2048 --vocab-size 32000 --micro-batch-size 1 --global-batch-size 64 --bf16 \
  --tensor-model-parallel-size ${TP}
EOF
)
srun -l --container-image=nvcr.io/nvidia/pytorch:24.01 bash -c "$CMD"
