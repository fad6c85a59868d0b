//! `Displace\Infer\Image`: an image for a user message, decoded once.
#![allow(non_snake_case)] // PHP parameter names are camelCase.

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use ext_php_rs::binary::Binary;
use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;

use super::exceptions::{infer_exception, no_constructor};
use super::paths::allowed_path;
use super::settings::max_image_pixels;
use crate::chat::image::{self, ImageError};

/// The largest image file `fromFile()` reads: a file is read whole before
/// it is decoded, and no image worth sending to a model is near this.
const MAX_FILE_BYTES: u64 = 256 << 20;

/// An image decoded to RGB pixels (PNG, JPEG, GIF, WebP or BMP), bounded
/// by `infer.max_image_pixels` before decoding.
#[php_class]
#[php(name = "Displace\\Infer\\Image")]
#[php(flags = ClassFlags::Final.union(ClassFlags::NotSerializable))]
#[derive(Debug)]
pub struct Image {
    pub(super) inner: image::Image,
}

fn refused(e: ImageError) -> PhpException {
    infer_exception(e.to_string())
}

/// Read the image file at `path`: allowed by `open_basedir`, a regular
/// file, at most [`MAX_FILE_BYTES`].
fn read_file(path: &Path) -> Result<Vec<u8>, String> {
    let resolved = allowed_path(path).map_err(|e| e.to_string())?;
    let path = resolved.as_path();
    let shown = path.display();
    let file =
        std::fs::File::open(path).map_err(|e| format!("cannot open image file {shown}: {e}"))?;
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot read image file {shown}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("image path is not a regular file: {shown}"));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!(
            "image file {shown} is {} bytes, more than the {MAX_FILE_BYTES} an image file may be",
            meta.len()
        ));
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read image file {shown}: {e}"))?;
    Ok(bytes)
}

#[php_impl]
impl Image {
    /// Images come from `Image::fromFile()`, `Image::fromBytes()` or
    /// `Image::fromPixels()`.
    pub fn __construct() -> PhpResult<Self> {
        Err(no_constructor(
            "Image",
            "Image::fromFile(), Image::fromBytes() or Image::fromPixels()",
        ))
    }

    /// The image in the file at `path` (subject to `open_basedir`).
    pub fn from_file(path: Binary<u8>) -> PhpResult<Self> {
        let bytes: Vec<u8> = path.into();
        if bytes.contains(&0) {
            return Err(infer_exception("image path contains a NUL byte"));
        }
        let path = PathBuf::from(OsString::from_vec(bytes));
        let data = read_file(&path).map_err(infer_exception)?;
        let inner = image::Image::decode(&data, max_image_pixels())
            .map_err(|e| infer_exception(format!("{}: {e}", path.display())))?;
        Ok(Self { inner })
    }

    /// The image whose file's bytes are `bytes` (from `file_get_contents()`,
    /// an upload, `imagepng()`'s output …).
    pub fn from_bytes(bytes: Binary<u8>) -> PhpResult<Self> {
        let bytes: Vec<u8> = bytes.into();
        let inner = image::Image::decode(&bytes, max_image_pixels()).map_err(refused)?;
        Ok(Self { inner })
    }

    /// An image from raw pixels: `width` × `height` RGB triples, row by
    /// row (3 bytes a pixel).
    pub fn from_pixels(width: i64, height: i64, rgb: Binary<u8>) -> PhpResult<Self> {
        let dimension = |name: &str, v: i64| {
            u32::try_from(v).ok().filter(|v| *v > 0).ok_or_else(|| {
                infer_exception(format!(
                    "{name} must be a positive whole number of pixels, got {v}"
                ))
            })
        };
        let (w, h) = (dimension("width", width)?, dimension("height", height)?);
        let inner =
            image::Image::from_rgb(w, h, rgb.into(), max_image_pixels()).map_err(refused)?;
        Ok(Self { inner })
    }

    pub fn width(&self) -> i64 {
        i64::from(self.inner.width())
    }

    pub fn height(&self) -> i64 {
        i64::from(self.inner.height())
    }

    /// What it was decoded from: `'PNG'`, `'JPEG'`, `'GIF'`, `'WebP'`,
    /// `'BMP'` or `'pixels'`.
    pub fn format(&self) -> &'static str {
        self.inner.format()
    }

    /// SHA-256 (hex) of the width, the height (32-bit little-endian) and
    /// the RGB pixels: the image's identity for the prompt cache.
    pub fn sha256(&self) -> String {
        self.inner.digest_hex()
    }

    /// The pixels as a PNG file.
    pub fn to_png(&self) -> PhpResult<Binary<u8>> {
        Ok(Binary::from(self.inner.to_png().map_err(refused)?))
    }
}
