#!/bin/bash
export CUDA_DEVICE_MAX_CONNECTIONS=1
torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 1000000000 --hidden-size 4096 --num-attention-heads 32 \
  --seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 64 --bf16 \
  --ffn-hidden-size 14336 --vocab-size 32000 --swiglu --untie-embeddings-and-output-weights --disable-bias-linear \
  --normalization RMSNorm --tensor-model-parallel-size 2 --use-distributed-optimizer --sequence-parallel --num-experts 0
