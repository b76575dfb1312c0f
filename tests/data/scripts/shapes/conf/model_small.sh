# Sourced by sourced_config.sh: the model half of the arguments.
MODEL_ARGS="--num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048"
export CUDA_DEVICE_MAX_CONNECTIONS=1
