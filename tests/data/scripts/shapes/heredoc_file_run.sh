#!/bin/bash
# A launch script written by a here-document and then run with bash; `read -d ''` keeps the arguments.
read -r -d '' PAR <<'EOF2'
--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2
EOF2
cat > run_inner.sh <<EOF
torchrun --nproc_per_node 8 --nnodes 1 pretrain_gpt.py --num-layers 8 --hidden-size 1024 \\
  --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 --vocab-size 32000 \\
  --micro-batch-size 1 --global-batch-size 32 --bf16 $PAR
EOF
bash run_inner.sh
