//! `Displace\Infer\Embedding`: the vector of a text, from `Model::embed()`.

use ext_php_rs::binary::Binary;
use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;

use ext_php_rs::types::ZendHashTable;

use super::convert;
use super::errors::CallError;
use super::exceptions::no_constructor;

/// A text's embedding: float32 values, as llama.cpp computes them.
#[php_class]
#[php(name = "Displace\\Infer\\Embedding")]
#[php(flags = ClassFlags::Final.union(ClassFlags::NotSerializable))]
#[derive(Debug)]
pub struct Embedding {
    vector: Vec<f32>,
}

impl From<Vec<f32>> for Embedding {
    fn from(vector: Vec<f32>) -> Self {
        Self { vector }
    }
}

impl Embedding {
    fn norm_f64(&self) -> f64 {
        self.vector
            .iter()
            .map(|&x| f64::from(x) * f64::from(x))
            .sum::<f64>()
            .sqrt()
    }
}

#[php_impl]
impl Embedding {
    /// Embeddings come from `Model::embed()` and `Model::embedMany()`.
    pub fn __construct() -> PhpResult<Self> {
        Err(no_constructor(
            "Embedding",
            "Model::embed() or Model::embedMany()",
        ))
    }

    /// An embedding from stored values (a list of numbers, kept as float32),
    /// to compare with new ones.
    pub fn from_vector(values: &ZendHashTable) -> PhpResult<Embedding> {
        let items = convert::list_items(values).map_err(|(position, key)| CallError::NotAList {
            what: "values",
            position,
            key,
        })?;
        let vector = items
            .into_iter()
            .enumerate()
            .map(|(index, item)| {
                convert::finite_float(item)
                    .map(|x| x as f32)
                    .filter(|x| x.is_finite())
                    .ok_or_else(|| CallError::WrongElement {
                        what: "values",
                        index,
                        expected: "a finite number that fits a float32",
                        found: convert::describe_kind(item),
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(vector.into())
    }

    /// An embedding from the bytes `packed()` returned (little-endian
    /// float32).
    pub fn from_packed(bytes: Binary<u8>) -> PhpResult<Embedding> {
        let bytes: Vec<u8> = bytes.into();
        if !bytes.len().is_multiple_of(4) {
            return Err(CallError::PackedLength { bytes: bytes.len() }.into());
        }
        let vector: Vec<f32> = bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        if let Some(index) = vector.iter().position(|x| !x.is_finite()) {
            return Err(CallError::PackedNotFinite { index }.into());
        }
        Ok(vector.into())
    }

    /// The values (float32, widened to PHP floats exactly).
    pub fn vector(&self) -> Vec<f64> {
        self.vector.iter().map(|&x| f64::from(x)).collect()
    }

    /// How many values.
    pub fn dimensions(&self) -> i64 {
        self.vector.len() as i64
    }

    /// The values as little-endian float32 bytes: `pack('g*', ...vector())`.
    pub fn packed(&self) -> Binary<u8> {
        let bytes: Vec<u8> = self.vector.iter().flat_map(|x| x.to_le_bytes()).collect();
        Binary::from(bytes)
    }

    /// The Euclidean length.
    pub fn norm(&self) -> f64 {
        self.norm_f64()
    }

    /// This embedding scaled to length 1; a zero vector is returned unchanged.
    pub fn normalize(&self) -> Embedding {
        let norm = self.norm_f64();
        if norm == 0.0 {
            return self.vector.clone().into();
        }
        self.vector
            .iter()
            .map(|&x| (f64::from(x) / norm) as f32)
            .collect::<Vec<_>>()
            .into()
    }

    /// The cosine of the angle between the two vectors, from -1 to 1 (0 when
    /// either is a zero vector). Both must have the same dimensions.
    pub fn cosine_similarity(&self, other: &Embedding) -> PhpResult<f64> {
        if self.vector.len() != other.vector.len() {
            return Err(CallError::DimensionMismatch {
                left: self.vector.len(),
                right: other.vector.len(),
            }
            .into());
        }
        let dot: f64 = self
            .vector
            .iter()
            .zip(&other.vector)
            .map(|(&a, &b)| f64::from(a) * f64::from(b))
            .sum();
        let norms = self.norm_f64() * other.norm_f64();
        Ok(if norms == 0.0 {
            0.0
        } else {
            (dot / norms).clamp(-1.0, 1.0)
        })
    }
}
