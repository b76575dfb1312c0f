"""Megatron-LM's command-line flags: how each one is parsed, and which ones shardplan reads or knowingly ignores.

Why a table: to split an argument list correctly we must know, for every Megatron flag (including those
shardplan does not model), whether it takes a value and how many. The table below was dumped from the
argparse parser that `megatron/training/arguments.py::add_megatron_arguments` builds (NVIDIA/Megatron-LM
@ d98e8a64, 2026-08-22; allow_abbrev=False, so no prefix abbreviations), one token per option string:

    FLAG:CODE[~]
    CODE  T = store_true / BooleanOptional switch, F = store_false / `--no-` switch (both take no value);
          i / f / s = one int / float / other value; a suffix + * or a digit is argparse's nargs.
    ~     the flag has no effect on legality, memory or speed (data, tokenizer, lr schedule, logging,
          checkpoint paths, eval, init, loss scaling, kernel-fusion toggles of second-order speed).

Flags shardplan models are `MODELLED` (they set ModelSpec / JobSpec / Recipe fields) and `RULE_FLAGS`
(kept in `MegatronConfig.raw` for legality rules). Everything else is "not understood by shardplan" and
is reported, never silently dropped.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union

_TABLE = """
--account-for-embedding-in-pipeline-split:T --account-for-loss-in-pipeline-split:T
--accumulate-allreduce-grads-in-fp32:T --activation-func-clamp-value:f --activation-offload-fraction:f
--adam-beta1:f~ --adam-beta2:f~ --adam-eps:f~ --add-qkv-bias:T --adlr-autoresume-interval:i~ --adlr-autoresume:T~
--allow-ambiguous-pad-tokens:T~ --app-tag-run-name:s~ --app-tag-run-version:s~ --apply-layernorm-1p:T~
--apply-query-key-layer-scaling:T --apply-residual-connection-post-layernorm:T --apply-wd-to-qk-layernorm:T~
--async-ckpt-cpu-priority:i~ --async-ckpt-io-priority:i~ --async-ckpt-use-cpu-shm:T~ --async-save:T~
--async-strategy:s~ --attention-backend:s --attention-dropout:f --attention-output-gate:T
--attention-softmax-in-fp32:T~ --auto-detect-ckpt-format:T~ --batch-invariant-backend:s --batch-invariant-mode:T
--batch-size:i --bert-embedder-type:s~ --bert-load:s --bert-no-binary-head:F --bf16:T --biencoder-projection-dim:i
--biencoder-shared-query-context-model:T --block-data-path:s --cache-mla-latents:T~ --calc-ft-timeouts:T~
--calculate-per-token-loss:T --chat-template:s~ --check-for-large-grads:T~ --check-for-spiky-loss:T~
--check-weight-hash-across-dp-replicas-interval:i~ --checkpoint-activations:T --ckpt-assume-constant-structure:T~
--ckpt-convert-format:s~ --ckpt-convert-save:s~ --ckpt-convert-update-legacy-dist-opt-format:T~
--ckpt-drop-redundant-extra-state:T~ --ckpt-format:s --ckpt-fully-parallel-load-exchange-algo:s~
--ckpt-fully-parallel-load-per-rank-objects:T~ --ckpt-fully-parallel-load-process-group:s~
--ckpt-fully-parallel-load:T~ --ckpt-fully-parallel-save-process-group:s~ --ckpt-fully-parallel-save:T~
--ckpt-pg-tensors-cache-create:T~ --ckpt-pg-tensors-cache-path:s~ --ckpt-step:i~ --classes-fraction:f --clip-grad:f~
--config-logger-dir:s~ --context-parallel-size:i --cp-comm-type:s+ --cpu-offloading-num-layers:i
--cpu-offloading-retain-pinned-cpu-buffers:T --create-all-gather-group:T --cross-entropy-fusion-impl:s
--cross-entropy-loss-fusion:T --cuda-graph-impl:s --cuda-graph-modules:s+~ --cuda-graph-scope:s+~
--cuda-graph-warmup-steps:i --data-args-path:s~ --data-cache-path:s~ --data-parallel-random-init:T~
--data-parallel-sharding-strategy:s --data-path:s*~ --data-per-class-fraction:f --dataloader-defer-npy-index-mmap:T~
--dataloader-fast-cache-load:T~ --dataloader-inter-document-masking:T~ --dataloader-type:s
--ddp-average-in-collective:T --ddp-bucket-size:i --ddp-num-buckets:i --ddp-pad-buckets-for-high-nccl-busbw:T
--ddp-param-name-patterns-for-fp32-local-accumulation:s+ --ddp-reduce-scatter-with-fp32-accumulation:T
--decode-only-cuda-graphs:T~ --decoder-first-pipeline-num-layers:i --decoder-last-pipeline-num-layers:i
--decoder-num-layers:i --decoder-seq-length:i --decoupled-lr:f~ --decoupled-min-lr:f~
--decrease-batch-size-if-needed:T --defer-embedding-wgrad-compute:T --delay-offload-until-cuda-graph:T
--delay-wgrad-compute:T --delta-offload-bytes-across-pp-ranks:i --deterministic-mode:T --dino-bottleneck-size:i
--dino-freeze-last-layer:f --dino-head-hidden-size:i --dino-local-crops-number:i --dino-local-img-size:i
--dino-norm-last-layer:T --dino-teacher-temp:f --dino-warmup-teacher-temp-epochs:i --dino-warmup-teacher-temp:f
--disable-align-grad-reduce:F --disable-bf16-reduced-precision-matmul:T --disable-bias-linear:F
--disable-ckpt-load-validate-sharding-integrity:F~ --disable-clone-scatter-output-in-embedding:F
--disable-dsa-indexer-rotate-activation:F --disable-dsa-indexer-scoring-relu:F
--disable-flight-recorder-dump-on-timeout:F~ --disable-flight-recorder-extra-dump-on-exec:F~
--disable-flight-recorder-include-only-active:F~ --disable-fp8-wgrad:F --disable-gloo-process-groups:F~
--disable-jit-fuser:T~ --disable-log-loss-scale-to-tensorboard:F~ --disable-mamba-mem-eff-path:F
--disable-manual-gc-eval:F~ --disable-msc:T~ --disable-pad-vocab-size:F --disable-save-tokenizer-assets:F~
--disable-straggler-on-startup:T~ --disable-strict-fsdp-dtensor-load:F~ --disable-symmetric-registration:T
--disable-tokenizer-sentencepiece-ignore-extra-whitespaces:F~ --disable-tp-comm-bulk-dgrad:F
--disable-tp-comm-bulk-wgrad:F --disable-tp-comm-overlap-ag:F --disable-tp-comm-overlap-rs:F
--disable-tp-comm-split-ag:F --disable-tp-comm-split-rs:F --disable-use-tokenizer-model-from-checkpoint-args:F~
--dist-ckpt-format:s~ --dist-ckpt-optim-fully-reshardable:T~ --dist-ckpt-save-pre-mcore-014:T~
--dist-ckpt-strictness:s~ --dist-ckpt-workers:i~ --distrib-optim-fully-reshardable-mem-efficient:T~
--distribute-saved-activations:T --distributed-backend:s~ --distributed-timeout-minutes:i~
--distributed-timeout-seconds-after-init:i~ --dsa-indexer-head-dim:i --dsa-indexer-k-norm-epsilon:f
--dsa-indexer-k-norm-fp32:T --dsa-indexer-loss-coeff:f --dsa-indexer-n-heads:i --dsa-indexer-rope-interleaved:T
--dsa-indexer-skip-topk-offset:i --dsa-indexer-topk-freq:i --dsa-indexer-topk:i --dsa-indexer-use-sparse-loss:T
--dsa-kernel-backend:s --dump-param-to-param-group-map:s~ --embedding-init-method-std:f~ --embedding-path:s
--empty-unused-memory-level:i~ --enable-chunked-prefill:T~ --enable-cuda-graph:T --enable-experimental:T
--enable-ft-package:T~ --enable-full-sharding-in-hsdp:T --enable-mhc-connections:T --enable-msc:T~
--encoder-num-layers:i --encoder-seq-length:i --end-weight-decay:f~ --eod-mask-loss:T~
--ep-overlap-early-attn-memory-release:T --error-injection-rate:i~ --error-injection-type:s~
--eval-global-batch-size:i~ --eval-interval:i~ --eval-iters:i~ --eval-micro-batch-size:i~ --evidence-data-path:s
--exit-duration-in-mins:i~ --exit-interval:i~ --exit-on-missing-checkpoint:T~
--exit-signal-handler-for-dataloader:T~ --exit-signal-handler-for-training:T~ --exit-signal-handler:T~
--exit-signal:s~ --exp-avg-dtype:s --exp-avg-sq-dtype:s --experimental-attention-variant:s
--expert-model-parallel-size:i --expert-tensor-parallel-num-weight-shards:i --expert-tensor-parallel-size:i
--external-cuda-graph:T --fake-process-group:T --fault-injector-delay-start-iteration:i~
--fault-injector-fault-delay:f~ --fault-injector-fault-probabilities:s~ --fault-injector-fault-types:s~
--fault-injector-mtti-seconds:f~ --fault-injector-num-ranks:i~ --fault-injector-offset-seconds:f~
--fault-injector-ranks:s~ --fault-injector-seed:i~ --ffn-hidden-size:i --fim-data:T~ --fim-eod-token:s~
--fim-fragment-rate:f~ --fim-middle-token:s~ --fim-no-prefix:s~ --fim-pad-token:s~ --fim-prefix-token:s~
--fim-rate:f~ --fim-split-sample:s~ --fim-spm-rate:f~ --fim-suffix-token:s~ --fine-grained-activation-offloading:T
--fine-grained-offloading-max-inflight-offloads:i --finetune:T~ --first-last-layers-bf16:T
--flash-attention-version:i --flash-decode:T --flight-recorder-dump-path:s~ --flight-recorder-include-stack-trace:T~
--flight-recorder-trace-buffer-size:i~ --fp16-lm-cross-entropy:T --fp16:T --fp32-residual-connection:T
--fp4-format:s --fp4-param-gather:T --fp4-quantizer-factory:s --fp4-recipe:s --fp8-amax-compute-algo:s~
--fp8-amax-history-len:i~ --fp8-format:s --fp8-interval:i~ --fp8-margin:i~ --fp8-output-proj:T --fp8-param-gather:T
--fp8-quantizer-factory:s --fp8-recipe:s --freeze-all-layers:T~ --fsdp-db-use-persist-buf-on-alloc-fail:T
--fsdp-double-buffer:T --fsdp-manual-registration:T --ft-num-warmup-iters:i~ --full-validation:T~
--fused-residual-rmsnorm:T --gdp-cutedsl-kernel:T --gdp-num-chunk-states-to-recompute:i --gdp-num-householder:i
--global-batch-size:i --glu-linear-offset:f --gpu-sniff-test-interval:i~ --grad-reduce-in-bf16:T
--group-query-attention:T --grpo-clamp-eps-lower:f --grpo-clamp-eps-upper:f --grpo-entropy-term-weight:f
--grpo-filter-groups-with-same-reward:T --grpo-group-size:i --grpo-iterations:i --grpo-kl-beta:f
--grpo-prompts-per-step:i --gtp-expert-remat-nccl-ub:T --gtp-remat-nccl-ub:T --gtp-remat-opt-in-modules:s+
--gtp-remat-reduce-scatter-with-fp32-accumulation:T --head-lr-mult:f --heterogeneous-layers-config-encoded-json:s
--heterogeneous-layers-config-path:s --hidden-dropout:f --hidden-size:i --hierarchical-context-parallel-sizes:i+
--high-priority-a2a-comm-stream:T --high-priority-stream-groups:s+ --hybrid-context-parallel:T
--hybrid-layer-pattern:s --hybrid-override-pattern:s --hysteresis:i~ --ict-head-size:i --ict-load:s --img-h:i
--img-w:i --indexer-batch-size:i --indexer-log-interval:i --inference-batch-times-seqlen-threshold:i~
--inference-coordinator-port:i~ --inference-cuda-graph-all-prefills:T~ --inference-cuda-graph-max-tokens:i~
--inference-cuda-graph-scope:s --inference-disable-ep-consensus:T~ --inference-disable-triton-nvls-kernels:T
--inference-dynamic-batching-async-sched-mode:s~ --inference-dynamic-batching-block-size:i~
--inference-dynamic-batching-buffer-size-gb:f~ --inference-dynamic-batching-cuda-graph-mixed-prefill-count:i~
--inference-dynamic-batching-cuda-graph-sizing-distribution:s~ --inference-dynamic-batching-logprobs-mode:s~
--inference-dynamic-batching-mamba-memory-ratio:f~ --inference-dynamic-batching-max-requests:i~
--inference-dynamic-batching-max-tokens:i~ --inference-dynamic-batching-num-cuda-graphs:i~
--inference-dynamic-batching-paused-buffer-size-gb:f~
--inference-dynamic-batching-prefix-caching-coordinator-policy:s~
--inference-dynamic-batching-prefix-caching-eviction-policy:s~
--inference-dynamic-batching-prefix-caching-mamba-gb:f~ --inference-dynamic-batching-prefix-caching-routing-alpha:f~
--inference-dynamic-batching-prefix-caching:T~ --inference-dynamic-batching-sampling-backend:s~
--inference-dynamic-batching-track-generated-token-events:T~
--inference-dynamic-batching-track-paused-request-events:T~ --inference-dynamic-batching-unified-memory-level:i~
--inference-dynamic-batching:T~ --inference-fuse-tp-communication:T --inference-grouped-gemm-backend:s
--inference-logging-step-interval:i~ --inference-max-requests:i~ --inference-max-seq-length:i~
--inference-moe-disable-fused-quant-kernels:T --inference-moe-token-dispatcher-type:s --inference-rng-tracker:T~
--inference-shards:s~ --inference-text-gen-server-logging:T~ --inference-use-synchronous-zmq-collectives:T~
--inference-wandb-logging:T~ --init-method-std:f~ --init-method-xavier-uniform:T~ --init-model-with-meta-device:T~
--initial-loss-scale:f~ --inprocess-active-world-size:i~ --inprocess-barrier-timeout:f~
--inprocess-completion-timeout:f~ --inprocess-empty-cuda-cache:T~ --inprocess-granularity:s~
--inprocess-hard-timeout:f~ --inprocess-heartbeat-interval:f~ --inprocess-heartbeat-timeout:f~
--inprocess-last-call-wait:f~ --inprocess-max-iterations:i~ --inprocess-monitor-process-interval:f~
--inprocess-monitor-thread-interval:f~ --inprocess-progress-watchdog-interval:f~ --inprocess-restart:T~
--inprocess-soft-timeout:f~ --inprocess-termination-grace-time:f~ --is-hybrid-model:T --iter-per-epoch:i
--iterations-to-skip:i+~ --keep-fp8-transpose-cache:T --kitchen-attention-backend:s --kv-channels:i --kv-lora-rank:i
--langrl-env-config:s --lazy-mpu-init:T~ --linear-attention-freq:s --linear-conv-kernel-dim:i
--linear-key-head-dim:i --linear-num-key-heads:i --linear-num-value-heads:i --linear-value-head-dim:i
--lion-beta1:f~ --lion-beta2:f~ --load-main-params-from-ckpt:T~ --load:s~ --local-rank:i~
--log-device-memory-used:T~ --log-energy:T~ --log-interval:i~ --log-max-attention-logit:T~ --log-memory-interval:i~
--log-memory-to-tensorboard:T~ --log-num-zeros-in-grad:T~ --log-params-norm:T~ --log-progress:T~ --log-straggler:T~
--log-throughput:T~ --log-timers-to-tensorboard:T~ --log-validation-ppl-to-tensorboard:T~
--log-world-size-to-tensorboard:T~ --logging-level:i~ --logits-load-decode-threads:i --logits-load-dir:s
--logits-load-ignore-errors:T --logits-load-kd-loss-alpha:f --logits-load-msc-prefetch-depth:i
--logits-load-prefetch-factor:i --logits-save-dir:s --logits-save-dtype:s --logits-save-top-k:i
--logits-save-top-p-min-k:i --logits-save-top-p:f --loss-scale-window:f~ --loss-scale:f~ --lr-decay-iters:i~
--lr-decay-samples:i~ --lr-decay-style:s~ --lr-warmup-fraction:f~ --lr-warmup-init:f~ --lr-warmup-iters:i~
--lr-warmup-samples:i~ --lr-wsd-decay-iters:i~ --lr-wsd-decay-samples:i~ --lr-wsd-decay-style:s~ --lr:f~
--main-grads-dtype:s --main-params-dtype:s --make-vocab-size-divisible-by:i --mamba-head-dim:i
--mamba-inference-conv-states-dtype:s~ --mamba-inference-ssm-states-dtype:s~ --mamba-num-groups:i
--mamba-num-heads:i --mamba-state-dim:i --mamba-training-ssm-states-dtype:s --manual-gc-interval:i~ --manual-gc:T~
--mask-factor:f --mask-prob:f~ --mask-type:s --max-position-embeddings:i --max-seqlen-per-dp-cp-rank:i
--max-tokens-to-oom:i~ --megatron-fsdp-enable-fine-grained-param-gather:T --megatron-fsdp-grad-comm-dtype:s
--megatron-fsdp-main-grads-dtype:s --megatron-fsdp-main-params-dtype:s --megatron-fsdp-max-pool-double-buffer:T
--megatron-fsdp-version:i --memory-snapshot-path:s~ --merge-file:s~ --mhc-init-gating-factor:f
--mhc-num-residual-streams:i --mhc-recompute-layer-num:i --mhc-sinkhorn-iterations:i --micro-batch-size:i
--microbatch-group-size-per-virtual-pipeline-stage:i --mid-level-dataset-surplus:f~ --min-loss-scale:f~ --min-lr:f~
--min-offloaded-tensor-size:i --mla-down-proj-fusion:T --mlp-chunks-for-prefill:i --mlp-chunks-for-training:i
--mock-data:T~ --model-parallel-size:i --moe-apply-probs-on-input:T --moe-aux-loss-coeff:f+~
--moe-combine-bwd-dtype:s --moe-deepep-num-sms:i --moe-dispatch-fwd-dtype:s --moe-enable-deepep:T
--moe-enable-routing-replay:T --moe-expert-capacity-factor:f --moe-expert-rank-capacity-factor:f
--moe-ffn-hidden-size:i --moe-flex-dispatcher-backend:s --moe-flex-dispatcher-num-sms:i --moe-grouped-gemm:T
--moe-hybridep-num-blocks-permute:i --moe-hybridep-num-blocks-unpermute:i --moe-hybridep-num-sms-preprocessing:i
--moe-hybridep-num-sms:i --moe-hybridep-pad-uneven-dispatch-inputs:T --moe-input-jitter-eps:f~ --moe-latent-size:i
--moe-layer-freq:s --moe-layer-recompute:T --moe-mlp-glu-interleave-size:i --moe-ncclep-zero-copy:T
--moe-pad-expert-input-to-capacity:T --moe-pad-experts-for-cuda-graph-inference:T
--moe-paged-stash-buffer-size-factor-cpu:f --moe-paged-stash-buffer-size-factor-cuda:f --moe-paged-stash-page-size:i
--moe-paged-stash:T --moe-per-layer-logging:T~ --moe-permute-fusion-into-hybridep:T --moe-permute-fusion:T~
--moe-router-bias-update-rate:f~ --moe-router-dtype:s~ --moe-router-enable-expert-bias:T --moe-router-force-biased:f
--moe-router-force-load-balancing:T~ --moe-router-fusion:T~ --moe-router-group-topk:i
--moe-router-load-balancing-type:s+~ --moe-router-num-groups:i --moe-router-padding-for-fp8:T
--moe-router-padding-for-quantization:T --moe-router-pre-softmax:T --moe-router-quantile-balancing-ema:f
--moe-router-score-function:s --moe-router-topk-scaling-factor:f~ --moe-router-topk:i
--moe-routing-trace-capture-hidden-states:T~ --moe-routing-trace-capture-logits:T~
--moe-routing-trace-dump-weights:T~ --moe-routing-trace-max-training-iters:i~ --moe-routing-trace-path:s~
--moe-shared-expert-gate:T --moe-shared-expert-glu-interleave-size:i --moe-shared-expert-intermediate-size:i
--moe-shared-expert-overlap:T --moe-single-grouped-bias:T --moe-single-grouped-weight:T
--moe-token-dispatcher-type:s --moe-token-drop-policy:s --moe-upcycling-granularity:i --moe-use-grouped-tensor:T
--moe-use-upcycling:T --moe-z-loss-coeff:f~ --mrope-section:i+ --mscale-all-dim:f~ --mscale:f~ --mtp-detach-heads:T
--mtp-hsm:T --mtp-hybrid-override-pattern:s --mtp-loss-scaling-factor:f~ --mtp-num-layers:i --mtp-standalone:T
--mtp-use-repeated-layer:T --multi-latent-attention:T --multiple-validation-sets:T~ --muon-coefficient-type:s~
--muon-extra-scale-factor:f~ --muon-fp32-matmul-prec:s --muon-momentum:f~ --muon-nesterov:T~ --muon-no-split-qkv:F
--muon-num-ns-steps:i --muon-scalar-optimizer:s~ --muon-scale-mode:s~ --muon-tp-mode:s --muon-use-syrk:T
--mup-attn-scale-power:f --mup-base-head-dim:f --mup-base-hidden-size:i --mup-embedding-mult:f --mup-output-mult:f
--mup-width-mult:f --nccl-all-reduce-for-prefill:T --nccl-communicator-config-path:s~ --no-align-grad-reduce:F
--no-align-param-gather:F --no-barrier-with-level-1-timing:F~ --no-bias-dropout-fusion:F~ --no-bias-gelu-fusion:F~
--no-bias-swiglu-fusion:F~ --no-check-for-nan-in-loss-and-grad:F~ --no-ckpt-fully-parallel-save:F~
--no-ckpt-load-validate-sharding-integrity:F~ --no-clone-scatter-output-in-embedding:F
--no-create-attention-mask-in-dataloader:F~ --no-data-sharding:F --no-dsa-indexer-rotate-activation:F
--no-dsa-indexer-scoring-relu:F --no-flight-recorder-dump-on-timeout:F~ --no-flight-recorder-extra-dump-on-exec:F~
--no-flight-recorder-include-only-active:F~ --no-fp8-wgrad:F --no-gradient-accumulation-fusion:F
--no-gradient-reduce-div-fusion:F --no-inference-disable-ep-consensus:F~
--no-inference-dynamic-batching-prefix-caching:F~ --no-inference-text-gen-server-logging:F~
--no-inference-use-synchronous-zmq-collectives:F~ --no-inference-wandb-logging:F~ --no-initialization:F~
--no-load-optim:T~ --no-load-rng:T~ --no-log-loss-scale-to-tensorboard:F~ --no-manual-gc-eval:F~
--no-masked-softmax-fusion:F~ --no-mmap-bin-files:F~ --no-one-logger:F~ --no-overlap-p2p-communication:F
--no-pad-vocab-size:F --no-persist-layer-norm:T~ --no-pin-cpu-grads:F --no-pin-cpu-params:F
--no-position-embedding:F --no-rl-inference-logprobs-is-correction:F
--no-rl-offload-inference-model-weights-when-idle:F --no-rl-partial-rollouts:F --no-rl-persist-cuda-graphs:F
--no-rl-skip-bos-token:F --no-rl-training-cuda-graphs:F --no-rl-use-sequence-packing:F
--no-rl-verify-model-weights-swap:F --no-rope-freq:s~ --no-rope-fusion:F~ --no-save-optim:T~ --no-save-rng:T~
--no-save-tokenizer-assets:F~ --no-strict-fsdp-dtensor-load:F~
--no-tokenizer-sentencepiece-ignore-extra-whitespaces:F~ --no-tp-comm-bulk-dgrad:F --no-tp-comm-bulk-wgrad:F
--no-tp-comm-overlap-ag:F --no-tp-comm-overlap-rs:F --no-tp-comm-split-ag:F --no-tp-comm-split-rs:F
--no-use-layer-wise-param-layout:F --no-use-tokenizer-model-from-checkpoint-args:F~ --no-weight-decay-cond-type:s~
--no-yarn-correction-range-round-to-int:F~ --non-persistent-ckpt-type:s~ --non-persistent-global-ckpt-dir:s~
--non-persistent-local-ckpt-algo:s~ --non-persistent-local-ckpt-dir:s~ --non-persistent-save-interval:i~
--norm-epsilon:f~ --normalization:s --null-tokenizer-eod-id:i~ --null-tokenizer-pad-id:i~ --num-attention-heads:i
--num-channels:i --num-classes:i --num-dataset-builder-threads:i~ --num-distributed-optimizer-instances:i
--num-experts:i --num-layers-at-end-in-bf16:i --num-layers-at-start-in-bf16:i
--num-layers-per-virtual-pipeline-stage:i --num-layers:i --num-query-groups:i --num-speculative-tokens:i~
--num-virtual-stages-per-pipeline-rank:i --num-workers:i~ --nvtx-ranges:T~ --object-storage-cache-path:s~
--offload-modules:s+ --one-logger-async:T~ --one-logger-project:s~ --one-logger-run-name:s~ --onnx-safe:s~
--openai-gelu:T~ --optimizer-cpu-offload:T --optimizer-cuda-graph:T --optimizer-offload-fraction:f --optimizer:s
--otel-enabled:T~ --otel-service-name:s~ --otel-span-groups:s~ --outer-dp-sharding-strategy:s
--output-bert-embeddings:T~ --output-logit-dtype:s --overlap-cpu-optimizer-d2h-h2d:T
--overlap-dispatch-backward-with-experts-wgrad:T --overlap-grad-reduce:T --overlap-moe-expert-parallel-comm:T
--overlap-p2p-communication-warmup-flush:T --overlap-param-gather-with-optimizer-step:T --overlap-param-gather:T
--override-ckpt-iteration:i~ --override-opt-param-scheduler:T~ --override-opt_param-scheduler:T~
--padded-vocab-size:i --patch-dim:i --per-dataset-sequences-path:s~ --per-split-data-args-path:s~
--perform-rl-step:T --persistent-save-interval:i~ --phase-transition-iterations:s~
--pipeline-model-parallel-comm-backend:s --pipeline-model-parallel-layout:s --pipeline-model-parallel-size:i
--position-embedding-type:s --pretrained-checkpoint:s~ --profile-ranks:i+~ --profile-step-end:i~
--profile-step-start:i~ --profile:T~ --pytorch-profiler-collect-callstack:T~ --pytorch-profiler-collect-chakra:T~
--pytorch-profiler-collect-shapes:T~ --q-lora-rank:i --qk-clip-alpha:f --qk-clip-threshold:f --qk-clip:T
--qk-head-dim:i --qk-l2-norm:T --qk-layernorm:T --qk-pos-emb-head-dim:i --query-in-block-prob:f --quick-geglu:T
--rampup-batch-size:i3 --recompute-activations:T --recompute-granularity:s --recompute-method:s
--recompute-modules:s+ --recompute-num-layers:i --record-memory-history:T~ --record-shapes:T~ --refit-method:s
--relative-attention-max-distance:i --relative-attention-num-buckets:i --replication-factor:i~ --replication-jump:i~
--replication:T~ --rerun-mode:s~ --reset-attention-mask:T~ --reset-position-ids:T~
--result-rejected-tracker-filename:s~ --retriever-report-topk-accuracies:i+ --retriever-score-scaling:T
--reuse-grad-buf-for-mxfp8-param-ag:T --rl-consumption-granularity:s --rl-default-temperature:f --rl-default-top-k:i
--rl-default-top-p:f --rl-durable-rollout-bank:T --rl-generation-lag:f --rl-importance-sampling-truncation-coef:f
--rl-inference-expert-model-parallel-size:i --rl-inference-expert-tensor-model-parallel-size:i
--rl-inference-logprobs-is-correction:T --rl-inference-model-unified-memory-level:i --rl-inference-parsers:s*
--rl-inference-pipeline-model-parallel-size:i --rl-inference-tensor-model-parallel-size:i
--rl-kv-cache-management-mode:s --rl-max-inflight-requests:i --rl-offload-inference-model-weights-when-idle:T
--rl-offload-optimizer-during-inference:T --rl-partial-rollouts:T --rl-persist-cuda-graphs:T --rl-profile-dir:s
--rl-profile:T --rl-prompts-per-eval:i --rl-rollout-bank-dir:s --rl-rollout-bank-max-bytes:i
--rl-sequence-packing-algo:s --rl-sequence-packing-max-sequences-per-bin:i --rl-skip-bos-token:T
--rl-submission-granularity:s --rl-training-cuda-graphs:T --rl-use-sequence-packing:T
--rl-verify-model-weights-swap:T --rope-scaling-factor:f~ --rope-type:s~ --rotary-base:i~ --rotary-interleaved:T~
--rotary-percent:f~ --rotary-scaling-factor:f~ --rotary-seq-len-interpolation-factor:i~
--run-workload-inspector-server:T~ --sample-rate:f~ --save-activations-interval:i~ --save-dgrads-interval:i~
--save-interval:i~ --save-params-interval:i~ --save-retain-interval:i~ --save-tokens-per-expert-interval:i~
--save-wgrads-interval:i~ --save:s~ --seed:i~ --seq-length:i --sequence-parallel:T --sft-tokenizer-prompt-format:s
--sft:T --sgd-momentum:f~ --sharp-enabled-group:s --short-seq-prob:f~ --skip-train:T~ --softmax-type:s --spec:s*
--split:s~ --squared-relu:T --start-eval-at-iter:i~ --start-weight-decay:f~ --step-batch-size-schedule:s
--straggler-ctrlr-port:i~ --straggler-minmax-count:i~ --suggested-communication-unit-size:i --swiglu:T
--swin-backbone-type:s --symmetric-ar-type:s --te-precision-config-file:s --te-rng-tracker:T~
--tensor-model-parallel-size:i --tensor-parallel-num-weight-shards:i --tensorboard-dir:s~
--tensorboard-log-interval:i~ --tensorboard-queue-size:i~ --test-data-path:s*~ --test-mode:T~
--tiktoken-num-special-tokens:i~ --tiktoken-pattern:s~ --timing-log-level:i~ --timing-log-option:s~
--titles-data-path:s --tokenizer-hf-no-include-special-tokens:T~ --tokenizer-hf-no-use-fast:T~
--tokenizer-metadata:s~ --tokenizer-model:s~ --tokenizer-sentencepiece-legacy:T~ --tokenizer-special-tokens:s+~
--tokenizer-type:s~ --torch-fsdp2-no-reshard-after-forward:F --tp-comm-bootstrap-backend:s~ --tp-comm-overlap-cfg:s~
--tp-comm-overlap-rs-dgrad:T --tp-comm-overlap:T --train-data-path:s*~ --train-iters:i~ --train-samples:i~
--train-sync-interval:i~ --transformer-impl:s --trust-remote-code:T~ --untie-embeddings-and-output-weights:T
--use-checkpoint-args:T~ --use-checkpoint-opt-param-scheduler:T~ --use-checkpoint-opt_param-scheduler:T~
--use-cpu-initialization:T~ --use-dist-ckpt:T~ --use-distributed-optimizer:T --use-flash-attn:T~
--use-fused-weighted-squared-relu:T --use-gigatoken:T~ --use-grouped-gemm-for-dense-mlp:T
--use-grouped-gemm-for-shared-expert:T --use-kitchen-attention:T --use-legacy-static-engine:T~ --use-mcore-models:T~
--use-megatron-fsdp:T --use-mp-args-from-checkpoint-args:T~ --use-mup:T --use-nccl-ub:T --use-one-sent-docs:T
--use-persistent-ckpt-worker:T~ --use-precision-aware-optimizer:T --use-pytorch-profiler:T~
--use-ring-exchange-p2p:T --use-rope-scaling:T~ --use-rotary-position-embeddings:T
--use-same-sampling-seed-across-dp-ranks:F~ --use-sharp:T --use-te-activation-func:T --use-torch-fsdp2:T
--use-torch-optimizer-for-cpu-offload:T --use-tp-pp-dp-mapping:T --use-transformer-engine-op-fuser:T --v-head-dim:i
--valid-data-path:s*~ --validation-set-names:s+~ --verify-integrity:T~ --vision-backbone-type:s
--vision-pretraining-type:s --vision-pretraining:T --vocab-extra-ids:i~ --vocab-file:s~ --vocab-size:i
--wandb-entity:s~ --wandb-exp-name:s~ --wandb-project:s~ --wandb-save-dir:s~ --warmup:i~
--weight-decay-incr-style:s~ --weight-decay:f~ --wgrad-deferral-limit:i --window-attn-skip-freq:s --window-size:s
--yaml-cfg:s --yarn-beta-fast:f~ --yarn-beta-slow:f~ --yarn-correction-range-round-to-int:T~
--yarn-original-max-position-embeddings:i~
"""


@dataclass(frozen=True)
class FlagInfo:
    """How argparse reads one Megatron option string."""

    flag: str
    nargs: Union[int, str]  # 0 switch, 1 one value, "+" / "*" lists, 3 exactly three values
    value_type: str  # "int" | "float" | "str" | "switch"
    store_false: bool  # a `--no-...`-style switch that turns a default-on feature off
    no_effect: bool  # listed `~` above: ignored by shardplan on purpose

    @property
    def takes_value(self) -> bool:
        return self.nargs != 0


_TYPES = {"i": "int", "f": "float", "s": "str"}


def _parse_table(text: str) -> dict[str, FlagInfo]:
    flags: dict[str, FlagInfo] = {}
    for tok in text.split():
        flag, code = tok.split(":")
        no_effect = code.endswith("~")
        code = code.rstrip("~")
        if code in ("T", "F"):
            flags[flag] = FlagInfo(flag, 0, "switch", code == "F", no_effect)
            continue
        rest = code[1:]
        nargs: Union[int, str] = 1 if rest == "" else (int(rest) if rest.isdigit() else rest)
        flags[flag] = FlagInfo(flag, nargs, _TYPES[code[0]], False, no_effect)
    return flags


FLAGS: dict[str, FlagInfo] = _parse_table(_TABLE)

# Flags that set a field of ModelSpec / JobSpec / Recipe (see constraints/megatron_args.py).
MODELLED: frozenset[str] = frozenset("""
--num-layers --hidden-size --ffn-hidden-size --num-attention-heads --group-query-attention --num-query-groups
--kv-channels --max-position-embeddings --position-embedding-type --no-position-embedding
--use-rotary-position-embeddings --normalization --swiglu --squared-relu --disable-bias-linear --add-qkv-bias
--untie-embeddings-and-output-weights --hidden-dropout --attention-dropout --qk-layernorm --vocab-size
--make-vocab-size-divisible-by --seq-length --encoder-seq-length
--num-experts --moe-router-topk --moe-ffn-hidden-size --moe-shared-expert-intermediate-size --moe-layer-freq
--moe-router-enable-expert-bias --multi-latent-attention --q-lora-rank --kv-lora-rank --qk-head-dim
--qk-pos-emb-head-dim --v-head-dim --mtp-num-layers --softmax-type
--micro-batch-size --global-batch-size --bf16 --fp16 --fp8-format --fp8-recipe --optimizer
--tensor-model-parallel-size --pipeline-model-parallel-size --num-layers-per-virtual-pipeline-stage
--num-virtual-stages-per-pipeline-rank --pipeline-model-parallel-layout --decoder-first-pipeline-num-layers
--decoder-last-pipeline-num-layers --account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split
--microbatch-group-size-per-virtual-pipeline-stage --no-overlap-p2p-communication
--context-parallel-size --cp-comm-type --hierarchical-context-parallel-sizes
--expert-model-parallel-size --expert-tensor-parallel-size --sequence-parallel
--recompute-granularity --recompute-method --recompute-num-layers --recompute-modules --recompute-activations
--distribute-saved-activations --use-distributed-optimizer --use-megatron-fsdp --use-torch-fsdp2
--overlap-grad-reduce --overlap-param-gather --tp-comm-overlap --moe-token-dispatcher-type --moe-grouped-gemm
--overlap-moe-expert-parallel-comm --fp8-param-gather --cross-entropy-loss-fusion
--num-distributed-optimizer-instances --moe-shared-expert-overlap --cpu-offloading-num-layers
""".split())

# Flags no spec field holds but legality rules read from `MegatronConfig.raw` (facts/megatron-rules.md).
RULE_FLAGS: frozenset[str] = frozenset("""
--overlap-param-gather-with-optimizer-step --moe-router-num-groups --moe-router-group-topk --moe-router-pre-softmax
--moe-router-score-function --moe-flex-dispatcher-backend --moe-enable-deepep --step-batch-size-schedule
--rampup-batch-size --decrease-batch-size-if-needed --tensor-parallel-num-weight-shards
--expert-tensor-parallel-num-weight-shards --use-tp-pp-dp-mapping --dataloader-type --calculate-per-token-loss
--hybrid-context-parallel --cross-entropy-fusion-impl --defer-embedding-wgrad-compute --delay-wgrad-compute
--no-gradient-accumulation-fusion --ckpt-format --megatron-fsdp-version --data-parallel-sharding-strategy
--first-last-layers-bf16 --num-layers-at-start-in-bf16 --num-layers-at-end-in-bf16 --fp4-format --fp4-recipe
--fp4-param-gather --grad-reduce-in-bf16 --checkpoint-activations --fake-process-group --ddp-bucket-size
--attention-backend --accumulate-allreduce-grads-in-fp32
""".split())

def lookup(flag: str) -> FlagInfo | None:
    """The Megatron parse rule for an option string, or None if Megatron-LM has no such flag."""
    return FLAGS.get(flag)


def _check_tables() -> None:
    """Our hand lists must name real Megatron flags, or a typo would silently mark a flag unknown."""
    bad = sorted((MODELLED | RULE_FLAGS) - FLAGS.keys())
    assert not bad, f"not Megatron-LM flags: {bad}"
    both = sorted(f for f in MODELLED | RULE_FLAGS if FLAGS[f].no_effect)
    assert not both, f"marked both understood and no-effect: {both}"


_check_tables()
