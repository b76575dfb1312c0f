export CODE_DIR=/opt/megatron
export PARAMS=" --pipeline-model-parallel-size ${PP} --micro-batch-size ${MBS} --global-batch-size 32 \
  --num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 \
  --max-position-embeddings 2048 --vocab-file /data/gpt2-vocab.json --merge-file /data/gpt2-merges.txt --fp16"
