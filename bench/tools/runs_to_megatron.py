"""Turn published measured runs (runs.csv rows) into Megatron-LM command lines plus the hardware facts
shardplan needs. Prints JSON lines: {id, model, hardware, nodes, gpus_per_node, world, args, measured}.
Rows that cannot be expressed are printed with "skip": reason."""
import csv, json, os, re, sys
HERE = os.path.dirname(os.path.abspath(__file__))
FACTS = os.path.join(HERE, '..', '..', 'constraints', 'models', 'hf_configs')  # the bundled HF config.json files
MODEL_FILES = {
 'Llama3-8B': 'Llama-3.1-8B', 'Llama3.1-8B': 'Llama-3.1-8B', 'Llama3-70B': 'Llama-3.1-70B', 'Llama3.1-70B': 'Llama-3.1-70B',
 'Llama3.1-405B': 'Llama-3.1-405B', 'Llama3-405B': 'Llama-3.1-405B', 'Llama2-7B': 'Llama-2-7b', 'Llama2-13B': 'Llama-2-13b',
 'Llama2-70B': 'Llama-2-70b', 'Mixtral-8x7B': 'Mixtral-8x7B-v0.1', 'Mixtral-8x22B': 'Mixtral-8x22B-v0.1', 'DeepSeek-V3': 'DeepSeek-V3',
 'Qwen3-235B-A22B': 'Qwen3-235B-A22B', 'Qwen3-30B-A3B': 'Qwen3-30B-A3B', 'Qwen3-8B': 'Qwen3-8B', 'Nemotron4-340B': 'Nemotron-4-340B',
 'Moonlight-16B-A3B': 'Moonlight-16B-A3B', 'Kimi-K2': 'Kimi-K2-Instruct', 'GPT3-175B': 'GPT-3-175B', 'GPT-OSS-120B': 'gpt-oss-120b', 'GPT-OSS-20B': 'gpt-oss-20b',
}
HARDWARE = [('A100', 'a100-sxm-80gb', 8), ('H800', 'h800-sxm-80gb', 8), ('H200', 'h200-sxm-141gb', 8), ('H100', 'h100-sxm-80gb', 8),
            ('GB200', 'gb200-nvl72', 4), ('GB300', 'gb300-nvl72', 4), ('B200', 'b200', 8), ('B300', 'b300', 8),
            ('MI300X', 'mi300x', 8), ('MI325X', 'mi325x', 8), ('MI355X', 'mi355x', 8)]
def i(x):
    try: return int(float(x))
    except (TypeError, ValueError): return None
def model_args(r):
    name = MODEL_FILES.get(r['model'])
    seq = i(r['seq_len'])
    if name:
        c = json.load(open(os.path.join(FACTS, name + '.json')))
        mt = c.get('model_type', '')
        if mt in ('gpt2',):
            L, h, a, V = c['n_layer'], c['n_embd'], c['n_head'], c['vocab_size']
            return ['--num-layers', L, '--hidden-size', h, '--num-attention-heads', a, '--ffn-hidden-size', 4 * h,
                    '--seq-length', seq, '--max-position-embeddings', max(seq, c.get('n_positions', seq)), '--tokenizer-type', 'NullTokenizer', '--vocab-size', V]
        L, h, a = c['num_hidden_layers'], c['hidden_size'], c['num_attention_heads']
        kv = c.get('num_key_value_heads') or a
        out = ['--num-layers', L, '--hidden-size', h, '--num-attention-heads', a, '--ffn-hidden-size', c['intermediate_size'],
               '--seq-length', seq, '--max-position-embeddings', max(seq, c.get('max_position_embeddings') or seq),
               '--tokenizer-type', 'NullTokenizer', '--vocab-size', c['vocab_size'], '--position-embedding-type', 'rope',
               '--normalization', 'RMSNorm', '--disable-bias-linear']
        out += ['--squared-relu'] if c.get('hidden_act') == 'relu2' else ['--swiglu']
        if not c.get('tie_word_embeddings', False): out += ['--untie-embeddings-and-output-weights']
        if 'kv_lora_rank' in c:
            out += ['--multi-latent-attention', '--q-lora-rank', c['q_lora_rank'], '--kv-lora-rank', c['kv_lora_rank'],
                    '--qk-head-dim', c['qk_nope_head_dim'], '--qk-pos-emb-head-dim', c['qk_rope_head_dim'], '--v-head-dim', c['v_head_dim']]
            if c.get('q_lora_rank') is None: out = [x for x in out if x not in ('--q-lora-rank', None)]
        elif kv < a:
            out += ['--group-query-attention', '--num-query-groups', kv]
        hd = c.get('head_dim')
        if hd and hd != h // a and 'kv_lora_rank' not in c: out += ['--kv-channels', hd]
        if mt.startswith('qwen3'): out += ['--qk-layernorm']
        E = c.get('num_local_experts') or c.get('n_routed_experts') or c.get('num_experts')
        if E:
            k = c.get('num_experts_per_tok')
            moe_ffn = c.get('moe_intermediate_size') or c['intermediate_size']
            out += ['--num-experts', E, '--moe-router-topk', k, '--moe-ffn-hidden-size', moe_ffn, '--moe-grouped-gemm',
                    '--moe-token-dispatcher-type', 'alltoall', '--moe-router-load-balancing-type', 'aux_loss']
            if c.get('n_shared_experts'): out += ['--moe-shared-expert-intermediate-size', c['n_shared_experts'] * moe_ffn]
            fk = c.get('first_k_dense_replace') or 0
            if fk: out += ['--moe-layer-freq', '([0]*%d+[1]*%d)' % (fk, L - fk)]
        return out
    # synthetic GPT rows carry their own shape
    h, L, a = i(r['hidden']), i(r['layers']), i(r['heads'])
    if not (h and L and a and seq): return None
    ffn = i(r['ffn_hidden']) or 4 * h
    return ['--num-layers', L, '--hidden-size', h, '--num-attention-heads', a, '--ffn-hidden-size', ffn, '--seq-length', seq,
            '--max-position-embeddings', seq, '--tokenizer-type', 'NullTokenizer', '--vocab-size', i(r['vocab']) or 51200]
def precision_args(p):
    p = (p or '').upper()
    if p.startswith('FP16'): return ['--fp16']
    if 'NVFP4' in p: return ['--bf16', '--fp4-format', 'e2m1', '--fp4-recipe', 'nvfp4']
    if 'MXFP8' in p or 'FP8-MX' in p: return ['--bf16', '--fp8-format', 'e4m3', '--fp8-recipe', 'mxfp8']
    if 'BLOCKWISE' in p: return ['--bf16', '--fp8-format', 'e4m3', '--fp8-recipe', 'blockwise']
    if 'FP8' in p: return ['--bf16', '--fp8-format', 'hybrid', '--fp8-recipe', 'tensorwise']
    return ['--bf16']
def row_case(r):
    rid = r['source_id']
    hw = next(((n, g) for key, n, g in HARDWARE if key in r['hardware'].upper()), None)
    if hw is None: return {'id': rid, 'skip': 'hardware ' + r['hardware']}
    gpus = i(r['gpus']); tp, pp, cp = i(r['tp']) or 1, i(r['pp']) or 1, i(r['cp']) or 1
    gbs, mbs, assumed = i(r['gbs']), i(r['mbs']), []
    if gbs and not mbs and r['tp'] and r['pp']:
        dp = i(r['dp']) or (gpus // (tp * pp * cp) if gpus else None)
        mbs = (gbs // dp if rid.startswith('TTITAN') and dp and gbs % dp == 0 else 1); assumed.append(f'mbs={mbs}')
    if not (gpus and gbs and mbs and r['tp'] and r['pp']): return {'id': rid, 'skip': 'incomplete recipe'}
    if not i(r['seq_len']): return {'id': rid, 'skip': 'no sequence length'}
    m = model_args(r)
    if m is None: return {'id': rid, 'skip': 'model ' + r['model']}
    hardware, gpn = hw
    if gpus % gpn: gpn = 1
    a = m + ['--micro-batch-size', mbs, '--global-batch-size', gbs, '--tensor-model-parallel-size', tp,
             '--pipeline-model-parallel-size', pp, '--context-parallel-size', cp] + precision_args(r['precision'])
    vpp = i(r['vpp']); stages = pp * (vpp or 1)
    layers = int(m[m.index('--num-layers') + 1])
    if layers % stages and (layers + 2) % stages == 0:
        a += ['--account-for-embedding-in-pipeline-split', '--account-for-loss-in-pipeline-split']
    if layers % stages and (layers + 2) % stages:
        # what the published recipes for such models use: a hand-written layout (E embedding, t layer, L loss) over PP*VPP stages
        units = ['E'] + ['t'] * layers + ['L']; base, extra = divmod(len(units), stages); out, pos = [], 0
        for k in range(stages):
            n = base + (1 if k >= stages - extra else 0); out.append(''.join(units[pos:pos + n])); pos += n
        a += ['--pipeline-model-parallel-layout', '|'.join(out)]; assumed.append('even pipeline layout')
    elif vpp and vpp > 1: a += ['--num-virtual-stages-per-pipeline-rank', vpp]
    ep, etp = i(r['ep']), i(r['etp'])
    if ep and ep > 1 and not etp and rid.startswith(('MBR', 'MBCARD', 'MBSKILL')):
        etp = 1; assumed.append('etp=1 (Megatron-Bridge MoE presets)')
    if ep and ep > 1: a += ['--expert-model-parallel-size', ep]
    if etp: a += ['--expert-tensor-parallel-size', etp]
    if tp > 1 and r['sequence_parallel'].lower() != 'false': a += ['--sequence-parallel']
    rc = r['recompute'].lower()
    if rc.startswith('full'): a += ['--recompute-granularity', 'full', '--recompute-method', 'uniform', '--recompute-num-layers', 1]
    elif rc.startswith('selective'): a += ['--recompute-granularity', 'selective']
    z = r['zero_or_fsdp']
    if 'FSDP2' in z: a += ['--use-torch-fsdp2', '--no-gradient-accumulation-fusion']
    elif 'Megatron-FSDP' in z: a += ['--use-megatron-fsdp', '--data-parallel-sharding-strategy', 'optim_grads_params', '--ckpt-format', 'fsdp_dtensor']
    elif 'no distributed optimizer' not in z and not r['source_id'].startswith(('SC21', 'KORTH22', 'MLMREADME')): a += ['--use-distributed-optimizer', '--overlap-grad-reduce', '--overlap-param-gather']
    measured = {k: float(r[k]) for k in ('tokens_per_s_per_gpu', 'tflops_per_gpu', 'mfu', 'iter_time_s', 'mem_per_gpu_gib') if r[k] not in ('', None) and re.match(r'^[0-9.eE+-]+$', r[k])}
    oom = 'OOM' in r['notes'] or 'does-not-fit' in r['notes']
    cdmc = '8' if ('Megatron-FSDP' in z or 'FSDP2' in z) else '1'
    return {'id': rid, 'model': r['model'], 'cuda_device_max_connections': cdmc, 'hardware': hardware, 'gpus_per_node': gpn, 'nodes': gpus // gpn, 'world': gpus,
            'args': [str(x) for x in a], 'measured': measured, 'outcome': 'oom' if oom else 'ran', 'precision': r['precision'], 'source': r['source'], 'assumed': assumed, 'hardware_as_published': r['hardware']}
if __name__ == '__main__':
    for path in sys.argv[1:]:
        for r in csv.DictReader(open(path)):
            print(json.dumps(row_case(r)))
