//! An image given with a message: decoded once to RGB pixels, bounded before
//! decoding, and named by a hash of its pixels.
//!
//! Pure Rust (the `image` crate decodes): the engine hands the pixels to
//! llama.cpp's projector, a remote backend sends them as PNG. The hash is of
//! what the model sees (width, height and the RGB bytes), not of the file:
//! the same picture saved as PNG or BMP is the same image to the prompt
//! cache, and two files differing in one pixel are not.

use std::fmt;
use std::io::Cursor;
use std::sync::Arc;

use ::image::{ImageFormat, ImageReader, Limits};
use sha2::{Digest, Sha256};

/// Why bytes or pixels are not an image the model can take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageError {
    #[error("the image is empty (0 bytes)")]
    Empty,
    #[error("the bytes are not an image in a known format (PNG, JPEG, GIF, WebP or BMP)")]
    UnknownFormat,
    #[error("the image declares {width} x {height} pixels, more than infer.max_image_pixels ({max}); nothing was decoded")]
    TooLarge { width: u64, height: u64, max: u64 },
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

impl Image {
    /// Decode a PNG, JPEG, GIF (its first frame), WebP or BMP file's bytes.
    /// The size the header declares is checked against `max_pixels` before
    /// anything is decoded, and the decoder's own allocation is bounded by
    /// it, so a small file that claims a huge picture costs nothing.
    /// Transparency is dropped (as llama.cpp's own loader drops it).
    pub fn decode(bytes: &[u8], max_pixels: u64) -> Result<Self, ImageError> {
        if bytes.is_empty() {
            return Err(ImageError::Empty);
        }
        let format = ::image::guess_format(bytes).map_err(|_| ImageError::UnknownFormat)?;
        let name = format_name(format).ok_or(ImageError::UnknownFormat)?;
        let damaged = |e: ::image::ImageError| ImageError::Damaged {
            format: name,
            detail: e.to_string(),
        };
        let (width, height) = ImageReader::with_format(Cursor::new(bytes), format)
            .into_dimensions()
            .map_err(damaged)?;
        check_size(width, height, max_pixels)?;
        let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
        let mut limits = Limits::default();
        limits.max_image_width = Some(width);
        limits.max_image_height = Some(height);
        // The decoded picture at its widest (RGBA, 16 bits a channel), and
        // the decoder's own buffers beside it.
        limits.max_alloc = Some(u64::from(width) * u64::from(height) * 8 + (64 << 20));
        reader.limits(limits);
        let decoded = reader.decode().map_err(damaged)?;
        let rgb = decoded.into_rgb8();
        let (width, height) = rgb.dimensions();
        Ok(Self::new(width, height, rgb.into_raw(), name))
    }

    /// An image from raw RGB pixels, row by row (3 bytes a pixel).
    pub fn from_rgb(
        width: u32,
        height: u32,
        rgb: Vec<u8>,
        max_pixels: u64,
    ) -> Result<Self, ImageError> {
        check_size(width, height, max_pixels)?;
        let expected = u64::from(width) * u64::from(height) * 3;
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
        Self {
            inner: Arc::new(Pixels {
                width,
                height,
                rgb,
                digest,
                format,
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

fn check_size(width: u32, height: u32, max_pixels: u64) -> Result<(), ImageError> {
    if width == 0 || height == 0 {
        return Err(ImageError::NoPixels { width, height });
    }
    let pixels = u64::from(width) * u64::from(height);
    if pixels > max_pixels {
        return Err(ImageError::TooLarge {
            width: width.into(),
            height: height.into(),
            max: max_pixels,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: u64 = 1 << 24;

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
                max: MAX
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
            Image::from_rgb(10, 10, vec![0; 300], 99),
            Err(ImageError::TooLarge { .. })
        ));
    }
}
