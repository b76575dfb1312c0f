"""Build the two tiny real tokenizers under tests/data/tokenizers (run from the repository root:
`python tests/data/tokenizers/build_fixtures.py`); trained on this project's own docs/reading-scripts-and-configs.md.

tiny_sp.model: a SentencePiece BPE model of 250 pieces, identity normalisation (no 240 KB NFKC table) (sentencepiece 0.2.x SentencePieceTrainer).
tiny_hf/tokenizer.json: a HuggingFace byte-level BPE of 300 tokens plus 3 added special tokens (tokenizers 0.2x
BpeTrainer), so len(tokenizer) = 303.
"""
from __future__ import annotations

import io
from pathlib import Path

import sentencepiece
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

HERE = Path(__file__).parent
TEXT = (HERE.parents[2] / "docs" / "reading-scripts-and-configs.md").read_text().splitlines()

model = io.BytesIO()
sentencepiece.SentencePieceTrainer.train(sentence_iterator=iter(TEXT), model_writer=model, vocab_size=250,
                                         model_type="bpe", character_coverage=1.0,
                                         normalization_rule_name="identity")
(HERE / "tiny_sp.model").write_bytes(model.getvalue())

hf = Tokenizer(models.BPE(unk_token="[UNK]"))
hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
hf.train_from_iterator(TEXT, trainers.BpeTrainer(vocab_size=300, special_tokens=["[UNK]"], show_progress=False,
                                                 initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
hf.add_special_tokens(["<|begin_of_text|>", "<|end_of_text|>", "<|pad|>"])
(HERE / "tiny_hf").mkdir(exist_ok=True)
hf.save(str(HERE / "tiny_hf" / "tokenizer.json"))
