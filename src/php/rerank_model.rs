//! `Displace\Infer\RerankModel`: scores documents against a query.

#![allow(non_snake_case)] // PHP parameter names are camelCase: `topK: 3`.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use ext_php_rs::binary::Binary;
use ext_php_rs::boxed::ZBox;
use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;
use ext_php_rs::types::ZendHashTable;

use super::convert::{self, OptionsArg};
use super::errors::CallError;
use super::exceptions::no_constructor;
use super::model::{embed_text, prompt_list};
use super::options::rerank_params;
use super::paths::allowed_path;
use super::timeout::stop_check;
use crate::engine::rerank::{self, Reranker};

/// A model that judges how relevant documents are to a query: a
/// cross-encoder, or an instruct model asked yes or no.
#[php_class]
#[php(name = "Displace\\Infer\\RerankModel")]
#[php(flags = ClassFlags::Final.union(ClassFlags::NotSerializable))]
#[derive(Debug)]
pub struct RerankModel {
    inner: Option<Reranker>,
}

impl RerankModel {
    fn open(&self) -> Result<&Reranker, CallError> {
        self.inner.as_ref().ok_or(CallError::Closed)
    }
}

#[php_impl]
impl RerankModel {
    /// Rerank models come from `RerankModel::load()`.
    pub fn __construct() -> PhpResult<Self> {
        Err(no_constructor("RerankModel", "RerankModel::load()"))
    }

    /// Load a GGUF reranker. Options: `n_gpu_layers`, `use_mmap`,
    /// `use_mlock`, `n_threads` (as for `Model::load()`), `n_ctx` (int >= 1,
    /// default 4096: the tokens a query and a document may take together, at
    /// most the model's trained context), `instruction` (string: what
    /// relevance means, for instruct models).
    #[php(defaults(options = OptionsArg::none()))]
    pub fn load(path: Binary<u8>, options: OptionsArg<'_>) -> PhpResult<Self> {
        let params = rerank_params(options)?;
        let path: Vec<u8> = path.into();
        let path = allowed_path(Path::new(OsStr::from_bytes(&path)))?;
        Ok(Self {
            inner: Some(Reranker::load(&path, &params)?),
        })
    }

    /// How relevant `document` is to `query`, in (0, 1).
    pub fn score(&self, query: Binary<u8>, document: Binary<u8>) -> PhpResult<f64> {
        let reranker = self.open()?;
        let query = embed_text(query.into(), "query")?;
        let document = embed_text(document.into(), "document")?;
        let scores = reranker
            .scores(&query, &[document], stop_check())
            .map_err(|e| e.outside_list())?;
        Ok(scores.first().copied().unwrap_or(0.0))
    }

    /// `documents` (a list of strings) best first, as
    /// `['index' => position in documents, 'score' => float]`, ties in input
    /// order; the first `topK` when given (>= 1).
    #[php(defaults(topK = None))]
    pub fn rank(
        &self,
        query: Binary<u8>,
        documents: &ZendHashTable,
        topK: Option<i64>,
    ) -> PhpResult<Vec<ZBox<ZendHashTable>>> {
        let reranker = self.open()?;
        let top_k = match topK {
            None => None,
            Some(k) if k >= 1 => Some(usize::try_from(k).unwrap_or(usize::MAX)),
            Some(k) => {
                return Err(CallError::InvalidArgument {
                    name: "topK",
                    expected: "an int >= 1 or null",
                    got: k.to_string(),
                }
                .into())
            }
        };
        let query = embed_text(query.into(), "query")?;
        let documents = prompt_list(documents, "documents", "a string", |index, item| {
            convert::string_bytes(item)
                .map(|bytes| embed_text(bytes.to_vec(), &format!("documents[{index}]")))
        })?;
        let scores = reranker.scores(&query, &documents, stop_check())?;
        rerank::ranking(&scores, top_k)
            .into_iter()
            .map(|(index, score)| {
                let mut entry = ZendHashTable::new();
                entry.insert("index", index as i64)?;
                entry.insert("score", score)?;
                Ok(entry)
            })
            .collect::<Result<Vec<_>, ext_php_rs::error::Error>>()
            .map_err(|e| CallError::Internal(e.to_string()).into())
    }

    /// Free the weights. Idempotent; later calls throw.
    pub fn close(&mut self) {
        self.inner = None;
    }
}
