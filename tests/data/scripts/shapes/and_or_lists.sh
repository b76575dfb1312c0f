#!/bin/bash
# `[ test ] && X` / `|| X` lists as bash runs them (mlcommons/training gpt3 run_gpt3.sh: `[ ${USE_BF16} = true ] &&
# options+=" --bf16"`), the `test` builtin, true/false, and ${X,,} / ${X:0:5} / ${X: -6} in tests.
USE_BF16=false
USE_FP16=true
PREC=BF16
NAME=llama3_8b_config
OPTS="--num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048"
OPTS+=" --vocab-size 32000 --micro-batch-size 1 --global-batch-size 32"
[ ${USE_BF16} = true ] && OPTS+=" --bf16"
[ "$USE_FP16" = true ] && OPTS+=" --fp16"
[ "$USE_BF16" = true ] || OPTS+=" --tensor-model-parallel-size 2"
test "$USE_BF16" = true && OPTS+=" --pipeline-model-parallel-size 2"
false && OPTS+=" --sequence-parallel"
true && OPTS+=" --use-distributed-optimizer"
[ "$USE_BF16" = true ] && OPTS+=" --recompute-activations" || OPTS+=" --overlap-grad-reduce"
if [ "${PREC,,}" = bf16 ]; then OPTS+=" --attention-dropout 0.0"; else OPTS+=" --hidden-dropout 0.5"; fi
[ "${NAME:0:5}" = llama ] && OPTS+=" --swiglu"
[ "${NAME: -6}" = config ] && OPTS+=" --disable-bias-linear"
torchrun --nproc_per_node 8 pretrain_gpt.py $OPTS
