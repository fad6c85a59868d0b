//! `Displace\Infer\Image`: an image for a user message, decoded once.
#![allow(non_snake_case)] // PHP parameter names are camelCase.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use ext_php_rs::binary::Binary;
use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;
use ext_php_rs::zend::ProcessGlobals;

use super::exceptions::{infer_exception, no_constructor};
use super::paths::allowed_path;
use super::settings::image_bounds;
use crate::chat::image::{self, ImageError, Probe};

/// The largest image file `fromFile()` reads: a file is read whole before
/// it is decoded, and no image worth sending to a model is near this.
const MAX_FILE_BYTES: u64 = 256 << 20;

/// An image decoded to RGB pixels (PNG, JPEG, GIF, WebP or BMP), bounded
/// by `infer.max_image_pixels` and `infer.max_image_side` before decoding,
/// its pixels counted against `memory_limit`.
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

extern "C" {
    /// The bytes of PHP's heap (Zend/zend_alloc.c); with `real_usage` the
    /// chunks taken from the system, which is what `memory_limit` bounds.
    fn zend_memory_usage(real_usage: bool) -> usize;
}

/// The pixels (and the file bytes and decoder buffers while decoding) live
/// outside PHP's heap, where `memory_limit` does not see them. They are
/// counted instead (`chat::image`'s ledger of this thread, which is this
/// request's): `asked` more bytes are refused when PHP's heap, the bytes
/// images hold already and `asked` would pass `memory_limit`.
fn admit(what: &str, asked: u64) -> PhpResult<()> {
    let limit = ProcessGlobals::get().memory_limit;
    let Ok(limit) = u64::try_from(limit) else {
        return Ok(()); // -1: no limit
    };
    // SAFETY: a plain read of the current request's heap counters; called
    // from a PHP method, so inside a request.
    let used = unsafe { zend_memory_usage(true) } as u64;
    let held = image::held_bytes();
    let left = limit.saturating_sub(used.saturating_add(held));
    if asked > left {
        return Err(infer_exception(format!(
            "{what} needs {asked} bytes outside PHP's heap, more than memory_limit ({limit} bytes) leaves: PHP uses {used} bytes and images hold {held}, so {left} are left"
        )));
    }
    Ok(())
}

/// Decode `bytes` once their header is read and the most decoding takes is
/// admitted; `shown` names them in errors (a path, or nothing).
fn decode(bytes: &[u8], shown: Option<&Path>) -> PhpResult<image::Image> {
    let refused = |e: ImageError| match shown {
        Some(path) => infer_exception(format!("{}: {e}", path.display())),
        None => refused(e),
    };
    let probe = Probe::new(bytes, image_bounds()).map_err(refused)?;
    let asked = probe.most_bytes();
    let what = format!("decoding a {} x {} image", probe.width(), probe.height());
    admit(&what, asked)?;
    let _decoding = image::charge(asked);
    probe.decode().map_err(refused)
}

/// Open the image file at `path` for reading, allowed by `open_basedir`, and
/// refuse anything but a regular file before reading a byte. It is opened
/// without blocking (a FIFO with no writer would block `open()` forever),
/// and its type is taken from the open descriptor, not from the name, so
/// a file swapped after the check is not read.
fn open_regular(path: &Path) -> Result<(File, u64), String> {
    let resolved = allowed_path(path).map_err(|e| e.to_string())?;
    let path = resolved.as_path();
    let shown = path.display();
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| format!("cannot open image file {shown}: {e}"))?;
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot read image file {shown}: {e}"))?;
    if !meta.is_file() {
        let kind = file_kind(&meta);
        return Err(format!(
            "image path is not a regular file but {kind}: {shown}"
        ));
    }
    // A regular file: reads block as usual again.
    // SAFETY: `file` owns the descriptor for the duration of both calls.
    let flags = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) };
    if flags < 0
        || unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0
    {
        return Err(format!(
            "cannot read image file {shown}: {}",
            std::io::Error::last_os_error()
        ));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!(
            "image file {shown} is {} bytes, more than the {MAX_FILE_BYTES} an image file may be",
            meta.len()
        ));
    }
    Ok((file, meta.len()))
}

/// What a path that is not a regular file is, in words.
fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else {
        "another kind of file"
    }
}

/// Read at most [`MAX_FILE_BYTES`] of `file` (`len` bytes, as it was
/// opened); a file that grew past the bound since is refused.
fn read_all(file: File, len: u64, path: &Path) -> Result<Vec<u8>, String> {
    let shown = path.display();
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read image file {shown}: {e}"))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(format!(
            "image file {shown} grew past the {MAX_FILE_BYTES} bytes an image file may be while it was read"
        ));
    }
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
        let (file, len) = open_regular(&path).map_err(infer_exception)?;
        admit(&format!("reading the image file {}", path.display()), len)?;
        let _file = image::charge(len);
        let data = read_all(file, len, &path).map_err(infer_exception)?;
        let inner = decode(&data, Some(&path))?;
        Ok(Self { inner })
    }

    /// The image whose file's bytes are `bytes` (from `file_get_contents()`,
    /// an upload, `imagepng()`'s output …).
    pub fn from_bytes(bytes: Binary<u8>) -> PhpResult<Self> {
        let bytes: Vec<u8> = bytes.into();
        // The copy of the string lives outside PHP's heap while it is decoded.
        let _copy = image::charge(bytes.len() as u64);
        let inner = decode(&bytes, None)?;
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
        let rgb: Vec<u8> = rgb.into();
        admit(&format!("a {w} x {h} image"), rgb.len() as u64)?;
        let inner = image::Image::from_rgb(w, h, rgb, image_bounds()).map_err(refused)?;
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
