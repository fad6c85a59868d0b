//! An image given with a message: decoded once to RGB pixels, bounded before
//! decoding, and named by a hash of its pixels.
//!
//! Pure Rust (the `image` crate decodes): the engine hands the pixels to
//! llama.cpp's projector, a remote backend sends them as PNG. The hash is of
//! what the model sees (width, height and the RGB bytes), not of the file:
//! the same picture saved as PNG or BMP is the same image to the prompt
//! cache, and two files differing in one pixel are not.
//!
//! Decoding is in two steps so that the caller can decide in between: a
//! [`Probe`] reads the header (and, for PNG, the chunks before the pixels,
//! their decompressed size bounded by [`ANCILLARY_BYTES`]) and says how many
//! bytes decoding will hold at most; [`Probe::decode`] then decodes under that
//! bound. The pixels live outside any allocator the caller counts, so every
//! image is charged to a [`Ledger`] while it lives (see [`held_bytes`]).

use std::fmt;
use std::io::Cursor;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ::image::{ColorType, DynamicImage, ImageDecoder, ImageFormat, ImageReader, Limits};
use sha2::{Digest, Sha256};

/// The most bytes a decoder may allocate besides the picture itself: the
/// decompressed ICC profile, text and Exif chunks of a PNG (read before its
/// pixels, and each one compressed, so a small file could otherwise inflate
/// to hundreds of megabytes) and the decoder's own row buffers. A PNG's
/// profile that would pass it is dropped (the `png` crate skips a profile
/// over its limit), which changes nothing here: the pixels are taken as
/// they are, no colour management is applied.
pub const ANCILLARY_BYTES: u64 = 8 << 20;

/// The most pixels and the longest side an image may declare; a larger one
/// is refused from its header, before anything is decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Width × height.
    pub pixels: u64,
    /// Width and height each.
    pub side: u32,
}

impl Bounds {
    /// 16 megapixels (4096 × 4096) and 16384 pixels a side: far above what
    /// a projector reads (it scales every image down to its own size), a
    /// decoded RGB image of 48 MiB at most, and no strip so thin that a
    /// projector's resizing of it costs far more than its pixels.
    pub const DEFAULT: Bounds = Bounds {
        pixels: 1 << 24,
        side: 1 << 14,
    };
}

/// Why bytes or pixels are not an image the model can take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageError {
    #[error("the image is empty (0 bytes)")]
    Empty,
    #[error("the bytes are not an image in a known format (PNG, JPEG, GIF, WebP or BMP)")]
    UnknownFormat,
    #[error("the image declares {width} x {height} pixels, more than infer.max_image_pixels ({max}); nothing was decoded")]
    TooLarge { width: u64, height: u64, max: u64 },
    #[error("the image declares {width} x {height} pixels, a side longer than infer.max_image_side ({max}); nothing was decoded")]
    TooLong { width: u32, height: u32, max: u32 },
    #[error("the image has no pixels ({width} x {height})")]
    NoPixels { width: u32, height: u32 },
    #[error("the {format} image could not be decoded: {detail}")]
    Damaged {
        format: &'static str,
        detail: String,
    },
    #[error("{given} bytes of pixels given for {width} x {height} RGB, which takes {expected}")]
    PixelCount {
        width: u32,
        height: u32,
        given: usize,
        expected: u64,
    },
    #[error("the image could not be encoded as PNG: {detail}")]
    Encode { detail: String },
}

/// Bytes held outside the caller's allocator, counted for the thread that
/// made them: the caller (PHP, one request per thread) compares what its
/// own thread holds with what its memory limit leaves. A charge remembers
/// its ledger, so pixels dropped on another thread (an engine's worker)
/// are taken off the right count.
#[derive(Debug, Default)]
pub struct Ledger {
    held: AtomicU64,
}

thread_local! {
    static LEDGER: Arc<Ledger> = Arc::new(Ledger::default());
}

/// The bytes of pixels this thread's images hold now, and those being
/// decoded (what [`charge`] has counted and not yet given back).
pub fn held_bytes() -> u64 {
    LEDGER.with(|l| l.held.load(Ordering::Relaxed))
}

/// Count `bytes` on this thread's ledger until the charge is dropped.
pub fn charge(bytes: u64) -> Charge {
    let ledger = LEDGER.with(Arc::clone);
    ledger.held.fetch_add(bytes, Ordering::Relaxed);
    Charge { ledger, bytes }
}

/// Bytes counted on a [`Ledger`]; given back when dropped.
#[derive(Debug)]
pub struct Charge {
    ledger: Arc<Ledger>,
    bytes: u64,
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.ledger.held.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

/// A decoded image: RGB, 8 bits a channel, row by row. Cheap to clone (the
/// pixels are shared).
#[derive(Clone)]
pub struct Image {
    inner: Arc<Pixels>,
}

struct Pixels {
    width: u32,
    height: u32,
    rgb: Vec<u8>,
    digest: [u8; 32],
    /// What it was decoded from (`"png"`, …; `"pixels"` for raw RGB).
    format: &'static str,
    /// The pixels' bytes, counted while they live.
    _charge: Charge,
}

impl fmt::Debug for Image {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Image({}x{} {}, {})",
            self.inner.width,
            self.inner.height,
            self.inner.format,
            &self.digest_hex()[..16]
        )
    }
}

impl PartialEq for Image {
    fn eq(&self, other: &Self) -> bool {
        self.inner.digest == other.inner.digest
    }
}

impl Eq for Image {}

/// The name of a format this build decodes; `None` for the others.
fn format_name(format: ImageFormat) -> Option<&'static str> {
    match format {
        ImageFormat::Png => Some("PNG"),
        ImageFormat::Jpeg => Some("JPEG"),
        ImageFormat::Gif => Some("GIF"),
        ImageFormat::WebP => Some("WebP"),
        ImageFormat::Bmp => Some("BMP"),
        _ => None,
    }
}

/// An image file whose header has been read and whose size is within its
/// [`Bounds`]: nothing of its pixels decoded yet.
pub struct Probe<'a> {
    decoder: Box<dyn ImageDecoder + 'a>,
    format: &'static str,
    width: u32,
    height: u32,
    /// The decoded picture's bytes, in the decoder's own colour type.
    picture: u64,
    /// Whether the picture must be converted to 8-bit RGB (a second buffer).
    converted: bool,
}

impl<'a> Probe<'a> {
    /// Read the header of a PNG, JPEG, GIF, WebP or BMP file's bytes and
    /// check the size it declares against `bounds`. A PNG's chunks before
    /// its pixels are read too, their decompressed size bounded by
    /// [`ANCILLARY_BYTES`].
    pub fn new(bytes: &'a [u8], bounds: Bounds) -> Result<Self, ImageError> {
        if bytes.is_empty() {
            return Err(ImageError::Empty);
        }
        let format = ::image::guess_format(bytes).map_err(|_| ImageError::UnknownFormat)?;
        let name = format_name(format).ok_or(ImageError::UnknownFormat)?;
        let damaged = |e: ::image::ImageError| ImageError::Damaged {
            format: name,
            detail: e.to_string(),
        };
        if let Some((width, height)) = png_size(bytes).filter(|&(w, h)| w > 0 && h > 0) {
            // The PNG decoder reserves a row's buffer under its byte limit as
            // it is made: a row too long would be refused as "memory limit
            // exceeded" rather than for its length.
            check_size(width, height, bounds)?;
        }
        let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
        // The PNG decoder takes its byte limit when it is made and keeps it:
        // the profile, text and Exif chunks it reads with the header, and
        // its buffers later, stay within ANCILLARY_BYTES.
        let mut limits = Limits::default();
        limits.max_alloc = Some(ANCILLARY_BYTES);
        reader.limits(limits);
        let decoder = reader.into_decoder().map_err(damaged)?;
        let (width, height) = decoder.dimensions();
        check_size(width, height, bounds)?;
        let color = decoder.color_type();
        Ok(Self {
            format: name,
            width,
            height,
            picture: decoder.total_bytes(),
            converted: color != ColorType::Rgb8,
            decoder: Box::new(decoder),
        })
    }

    pub fn width(&self) -> u32 {
        self.width
    }

    pub fn height(&self) -> u32 {
        self.height
    }

    /// The most bytes decoding holds at once besides the file: the picture
    /// as decoded, its 8-bit RGB copy when it needs one, and
    /// [`ANCILLARY_BYTES`]. What the image keeps afterwards is its RGB
    /// pixels ([`rgb_bytes`]).
    pub fn most_bytes(&self) -> u64 {
        let rgb = if self.converted {
            rgb_bytes(self.width, self.height)
        } else {
            0
        };
        self.picture + rgb + ANCILLARY_BYTES
    }

    /// Decode the pixels (a GIF's first frame). Transparency is dropped (as
    /// llama.cpp's own loader drops it).
    pub fn decode(self) -> Result<Image, ImageError> {
        let name = self.format;
        let damaged = |e: ::image::ImageError| ImageError::Damaged {
            format: name,
            detail: e.to_string(),
        };
        let mut decoder = self.decoder;
        let mut limits = Limits::default();
        limits.max_image_width = Some(self.width);
        limits.max_image_height = Some(self.height);
        limits.max_alloc = Some(self.picture + ANCILLARY_BYTES);
        decoder.set_limits(limits).map_err(damaged)?;
        let decoded = DynamicImage::from_decoder(decoder).map_err(damaged)?;
        let rgb = match decoded {
            DynamicImage::ImageRgb8(rgb) => rgb,
            other => other.into_rgb8(),
        };
        let (width, height) = rgb.dimensions();
        Ok(Image::new(width, height, rgb.into_raw(), name))
    }
}

/// The width and height a PNG's header (its first chunk, IHDR) declares.
fn png_size(bytes: &[u8]) -> Option<(u32, u32)> {
    if bytes.get(..8)? != b"\x89PNG\r\n\x1a\n" || bytes.get(12..16)? != b"IHDR" {
        return None;
    }
    let word = |at: usize| Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?));
    Some((word(16)?, word(20)?))
}

/// The bytes of a `width` × `height` image's RGB pixels.
pub fn rgb_bytes(width: u32, height: u32) -> u64 {
    u64::from(width) * u64::from(height) * 3
}

impl Image {
    /// Decode a PNG, JPEG, GIF (its first frame), WebP or BMP file's bytes:
    /// [`Probe::new`] and [`Probe::decode`] in one, for callers that need
    /// not decide in between.
    pub fn decode(bytes: &[u8], bounds: Bounds) -> Result<Self, ImageError> {
        Probe::new(bytes, bounds)?.decode()
    }

    /// An image from raw RGB pixels, row by row (3 bytes a pixel).
    pub fn from_rgb(
        width: u32,
        height: u32,
        rgb: Vec<u8>,
        bounds: Bounds,
    ) -> Result<Self, ImageError> {
        check_size(width, height, bounds)?;
        let expected = rgb_bytes(width, height);
        if rgb.len() as u64 != expected {
            return Err(ImageError::PixelCount {
                width,
                height,
                given: rgb.len(),
                expected,
            });
        }
        Ok(Self::new(width, height, rgb, "pixels"))
    }

    fn new(width: u32, height: u32, rgb: Vec<u8>, format: &'static str) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(width.to_le_bytes());
        hasher.update(height.to_le_bytes());
        hasher.update(&rgb);
        let digest = hasher.finalize().into();
        let charge = charge(rgb.len() as u64);
        Self {
            inner: Arc::new(Pixels {
                width,
                height,
                rgb,
                digest,
                format,
                _charge: charge,
            }),
        }
    }

    pub fn width(&self) -> u32 {
        self.inner.width
    }

    pub fn height(&self) -> u32 {
        self.inner.height
    }

    /// The pixels: RGB, row by row.
    pub fn rgb(&self) -> &[u8] {
        &self.inner.rgb
    }

    /// What the image was decoded from: `"PNG"`, `"JPEG"`, `"GIF"`,
    /// `"WebP"`, `"BMP"` or `"pixels"`.
    pub fn format(&self) -> &'static str {
        self.inner.format
    }

    /// SHA-256 of the width and height (32-bit little-endian) and the RGB
    /// bytes.
    pub fn digest(&self) -> &[u8; 32] {
        &self.inner.digest
    }

    pub fn digest_hex(&self) -> String {
        self.inner
            .digest
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// The pixels as a PNG file.
    pub fn to_png(&self) -> Result<Vec<u8>, ImageError> {
        let mut out = Cursor::new(Vec::new());
        ::image::write_buffer_with_format(
            &mut out,
            &self.inner.rgb,
            self.inner.width,
            self.inner.height,
            ::image::ExtendedColorType::Rgb8,
            ImageFormat::Png,
        )
        .map_err(|e| ImageError::Encode {
            detail: e.to_string(),
        })?;
        Ok(out.into_inner())
    }
}

impl Image {
    /// The pixels as a PNG file in base64, as servers take images.
    pub fn png_base64(&self) -> Result<String, ImageError> {
        use base64::Engine;
        Ok(base64::engine::general_purpose::STANDARD.encode(self.to_png()?))
    }

    /// The pixels as a PNG `data:` URL (OpenAI's `image_url`).
    pub fn data_url(&self) -> Result<String, ImageError> {
        Ok(format!("data:image/png;base64,{}", self.png_base64()?))
    }
}

fn check_size(width: u32, height: u32, bounds: Bounds) -> Result<(), ImageError> {
    if width == 0 || height == 0 {
        return Err(ImageError::NoPixels { width, height });
    }
    let pixels = u64::from(width) * u64::from(height);
    if pixels > bounds.pixels {
        return Err(ImageError::TooLarge {
            width: width.into(),
            height: height.into(),
            max: bounds.pixels,
        });
    }
    if width > bounds.side || height > bounds.side {
        return Err(ImageError::TooLong {
            width,
            height,
            max: bounds.side,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: Bounds = Bounds::DEFAULT;

    fn encoded(width: u32, height: u32, rgb: &[u8], format: ImageFormat) -> Vec<u8> {
        let mut out = Cursor::new(Vec::new());
        ::image::write_buffer_with_format(
            &mut out,
            rgb,
            width,
            height,
            ::image::ExtendedColorType::Rgb8,
            format,
        )
        .unwrap();
        out.into_inner()
    }

    fn png(width: u32, height: u32, rgb: &[u8]) -> Vec<u8> {
        encoded(width, height, rgb, ImageFormat::Png)
    }

    fn bmp(width: u32, height: u32, rgb: &[u8]) -> Vec<u8> {
        encoded(width, height, rgb, ImageFormat::Bmp)
    }

    fn pixels(width: u32, height: u32) -> Vec<u8> {
        (0..width * height * 3)
            .map(|i| (i * 7 % 251) as u8)
            .collect()
    }

    #[test]
    fn the_same_pixels_in_two_formats_are_the_same_image() {
        let rgb = pixels(5, 3);
        let a = Image::decode(&png(5, 3, &rgb), MAX).unwrap();
        let b = Image::decode(&bmp(5, 3, &rgb), MAX).unwrap();
        assert_eq!((a.format(), b.format()), ("PNG", "BMP"));
        assert_eq!(a.rgb(), &rgb[..]);
        assert_eq!(a, b);
        let c = Image::from_rgb(5, 3, rgb.clone(), MAX).unwrap();
        assert_eq!(a.digest(), c.digest());
        // The digest is SHA-256 of the size and the pixels, computed here
        // independently of Image::new.
        let mut bytes = 5u32.to_le_bytes().to_vec();
        bytes.extend(3u32.to_le_bytes());
        bytes.extend(&rgb);
        let expected: [u8; 32] = Sha256::digest(&bytes).into();
        assert_eq!(a.digest(), &expected);
    }

    #[test]
    fn one_pixel_changed_is_another_image() {
        let rgb = pixels(4, 4);
        let mut other = rgb.clone();
        other[20] ^= 1;
        let a = Image::from_rgb(4, 4, rgb, MAX).unwrap();
        let b = Image::from_rgb(4, 4, other, MAX).unwrap();
        assert_ne!(a, b);
        // Same bytes, other shape.
        let c = Image::from_rgb(8, 2, a.rgb().to_vec(), MAX).unwrap();
        assert_ne!(a, c);
    }

    #[test]
    fn png_round_trip_keeps_the_pixels() {
        let a = Image::from_rgb(7, 2, pixels(7, 2), MAX).unwrap();
        let b = Image::decode(&a.to_png().unwrap(), MAX).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn a_huge_declared_size_is_refused_before_decoding() {
        // A PNG header declaring 100,000 x 100,000 with no pixel data.
        let mut file = png(1, 1, &[0, 0, 0]);
        file[16..20].copy_from_slice(&100_000u32.to_be_bytes());
        file[20..24].copy_from_slice(&100_000u32.to_be_bytes());
        // The header's CRC, recomputed, so only the size is hostile.
        let crc = crc32fast::hash(&file[12..29]);
        file[29..33].copy_from_slice(&crc.to_be_bytes());
        assert_eq!(
            Image::decode(&file, MAX),
            Err(ImageError::TooLarge {
                width: 100_000,
                height: 100_000,
                max: MAX.pixels
            })
        );
    }

    #[test]
    fn bytes_that_are_not_an_image_are_refused() {
        assert_eq!(Image::decode(b"", MAX), Err(ImageError::Empty));
        assert_eq!(
            Image::decode(b"hello world", MAX),
            Err(ImageError::UnknownFormat)
        );
        let file = png(4, 4, &pixels(4, 4));
        let cut = &file[..file.len() - 30];
        assert!(
            matches!(
                Image::decode(cut, MAX),
                Err(ImageError::Damaged { format: "PNG", .. })
            ),
            "{:?}",
            Image::decode(cut, MAX)
        );
    }

    #[test]
    fn raw_pixels_must_fill_the_size() {
        assert_eq!(
            Image::from_rgb(2, 2, vec![0; 11], MAX),
            Err(ImageError::PixelCount {
                width: 2,
                height: 2,
                given: 11,
                expected: 12
            })
        );
        assert_eq!(
            Image::from_rgb(0, 2, vec![], MAX),
            Err(ImageError::NoPixels {
                width: 0,
                height: 2
            })
        );
        assert!(matches!(
            Image::from_rgb(
                10,
                10,
                vec![0; 300],
                Bounds {
                    pixels: 99,
                    side: 100
                }
            ),
            Err(ImageError::TooLarge { .. })
        ));
    }

    #[test]
    fn a_long_side_is_refused_before_decoding() {
        // 16,777,216 x 1 is within the pixel count; a PNG header claiming it.
        let mut file = png(1, 1, &[0, 0, 0]);
        file[16..20].copy_from_slice(&(1u32 << 24).to_be_bytes());
        let crc = crc32fast::hash(&file[12..29]);
        file[29..33].copy_from_slice(&crc.to_be_bytes());
        let too_long = ImageError::TooLong {
            width: 1 << 24,
            height: 1,
            max: 16384,
        };
        assert_eq!(Image::decode(&file, MAX), Err(too_long.clone()));
        assert!(too_long
            .to_string()
            .contains("a side longer than infer.max_image_side (16384)"));
        assert!(matches!(
            Image::from_rgb(1, 16385, vec![0; 16385 * 3], MAX),
            Err(ImageError::TooLong { max: 16384, .. })
        ));
        assert!(Image::from_rgb(16384, 1, vec![0; 16384 * 3], MAX).is_ok());
    }

    #[test]
    fn the_widest_image_allowed_decodes_within_the_decoders_limit() {
        // 16384 pixels of RGBA at 16 bits a channel: a row of 128 KiB, within
        // ANCILLARY_BYTES, which bounds the PNG decoder's own buffers.
        let rgba16: Vec<u8> = (0..16384 * 2 * 8).map(|i| (i % 253) as u8).collect();
        let mut out = Cursor::new(Vec::new());
        ::image::write_buffer_with_format(
            &mut out,
            &rgba16,
            16384,
            2,
            ::image::ExtendedColorType::Rgba16,
            ImageFormat::Png,
        )
        .unwrap();
        let file = out.into_inner();
        let probe = Probe::new(&file, MAX).unwrap();
        // Decoded as RGBA16, then converted to RGB.
        assert_eq!(
            probe.most_bytes(),
            16384 * 2 * 8 + 16384 * 2 * 3 + ANCILLARY_BYTES
        );
        let image = probe.decode().unwrap();
        assert_eq!((image.width(), image.height()), (16384, 2));
        // RGB at 8 bits needs no second buffer.
        let rgb = png(300, 200, &pixels(300, 200));
        assert_eq!(
            Probe::new(&rgb, MAX).unwrap().most_bytes(),
            300 * 200 * 3 + ANCILLARY_BYTES
        );
    }

    /// A 1 x 1 PNG with an ICC profile of `profile` zero bytes (compressed).
    fn png_with_profile(profile: usize) -> Vec<u8> {
        use ::image::codecs::png::PngEncoder;
        use ::image::ImageEncoder;
        let mut out = Vec::new();
        let mut encoder = PngEncoder::new(&mut out);
        encoder.set_icc_profile(vec![0; profile]).unwrap();
        encoder
            .write_image(&[9, 8, 7], 1, 1, ::image::ExtendedColorType::Rgb8)
            .unwrap();
        out
    }

    #[test]
    fn an_icc_profile_past_the_limit_is_dropped_and_the_pixels_decode() {
        for profile in [1 << 10, 64 << 20] {
            let file = png_with_profile(profile);
            assert!(file.len() < 1 << 20, "{} bytes", file.len());
            let probe = Probe::new(&file, MAX).unwrap();
            assert_eq!(probe.most_bytes(), 3 + ANCILLARY_BYTES);
            let image = probe.decode().unwrap();
            assert_eq!(image.rgb(), &[9, 8, 7]);
        }
    }

    #[test]
    fn images_are_counted_while_they_live_on_the_thread_that_made_them() {
        let before = held_bytes();
        let a = Image::from_rgb(10, 10, vec![1; 300], MAX).unwrap();
        let b = a.clone();
        assert_eq!(held_bytes() - before, 300);
        drop(a);
        assert_eq!(held_bytes() - before, 300, "a clone still holds the pixels");
        {
            let _decoding = charge(1000);
            assert_eq!(held_bytes() - before, 1300);
        }
        assert_eq!(held_bytes() - before, 300);
        // Dropped on another thread, given back to this thread's count, and
        // never counted on the other.
        let other = std::thread::spawn(move || {
            let mine = held_bytes();
            drop(b);
            mine == held_bytes()
        })
        .join()
        .unwrap();
        assert!(other);
        assert_eq!(held_bytes(), before);
    }

    #[test]
    fn large_images_of_every_format_decode_under_the_probes_limit() {
        // The decoder is made under max_alloc = ANCILLARY_BYTES: no format
        // may need more than that before its pixels are decoded.
        let (width, height) = (2048, 1536);
        let rgb = pixels(width, height);
        for format in [
            ImageFormat::Png,
            ImageFormat::Jpeg,
            ImageFormat::Bmp,
            ImageFormat::WebP,
        ] {
            let file = encoded(width, height, &rgb, format);
            let probe = Probe::new(&file, MAX).unwrap_or_else(|e| panic!("{format:?}: {e}"));
            assert_eq!(
                probe.most_bytes(),
                rgb_bytes(width, height) + ANCILLARY_BYTES,
                "{format:?}"
            );
            let image = probe.decode().unwrap_or_else(|e| panic!("{format:?}: {e}"));
            assert_eq!((image.width(), image.height()), (width, height));
        }
        // GIF decodes to RGBA: a second buffer for the RGB copy.
        let rgba: Vec<u8> = (0..640 * 480 * 4).map(|i| (i % 7) as u8 * 30).collect();
        let mut out = Cursor::new(Vec::new());
        ::image::write_buffer_with_format(
            &mut out,
            &rgba,
            640,
            480,
            ::image::ExtendedColorType::Rgba8,
            ImageFormat::Gif,
        )
        .unwrap();
        let file = out.into_inner();
        let probe = Probe::new(&file, MAX).unwrap();
        assert_eq!(
            probe.most_bytes(),
            640 * 480 * 4 + rgb_bytes(640, 480) + ANCILLARY_BYTES
        );
        assert_eq!(probe.decode().unwrap().width(), 640);
    }
}
