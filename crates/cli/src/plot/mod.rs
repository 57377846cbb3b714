//! Charts: Gantt charts of timelines and sweep plots, as PNG or SVG.
//!
//! plotters runs without its default features, so it never looks for system fonts (no fontconfig): the one
//! font every chart uses is DejaVu Sans, compiled into the binary and registered under "sans-serif" before
//! the first chart is drawn. Charts are drawn into memory and written in one go, so a failed write leaves no
//! half-written image and reports the path as bad input.

pub mod gantt;
pub mod raster;
pub mod scatter;
pub mod sweep;

use std::path::Path;
use std::sync::Once;

use anyhow::{Result, anyhow};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;

use crate::exit::bad_input;

/// The family every chart uses; it resolves to the embedded DejaVu Sans.
pub const FONT: &str = "sans-serif";

/// The image formats a chart can be written in, chosen by the output file's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Png,
    Svg,
}

impl Format {
    /// The format of `path`, from its extension (case-insensitive).
    pub fn of(path: &Path) -> Result<Format> {
        let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("png") => Ok(Format::Png),
            Some("svg") => Ok(Format::Svg),
            _ => Err(bad_input(format!(
                "cannot tell the image format of {}: give a file name ending in .png or .svg",
                path.display()
            ))),
        }
    }
}

/// Image sizes outside this range are refused: smaller ones cannot hold the labels, larger ones take
/// gigabytes of memory as bitmaps.
pub const MIN_SIDE: u32 = 320;
pub const MAX_SIDE: u32 = 16_000;

/// A chart that knows its size and can draw itself on any plotters backend.
pub trait Figure {
    fn size(&self) -> (u32, u32);
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()>;
}

/// Registers the embedded font once per process.
pub fn register_fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The bytes are a font shipped inside the binary, so a failure here is a build defect, not input.
        for (style, bytes) in [(FontStyle::Normal, dejavu::sans::regular()), (FontStyle::Bold, dejavu::sans::bold())] {
            if plotters::style::register_font(FONT, style, bytes).is_err() {
                panic!("the embedded DejaVu Sans font does not parse");
            }
        }
    });
}

/// Turns a plotters error (generic over the backend's error type) into an anyhow error.
pub fn drawing<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("drawing the chart failed: {e:?}")
}

/// Renders `figure` into the bytes of an image file of the given format.
pub fn render(figure: &impl Figure, format: Format) -> Result<Vec<u8>> {
    register_fonts();
    let (w, h) = figure.size();
    match format {
        Format::Png => {
            let mut pixels = vec![0u8; w as usize * h as usize * 3];
            {
                let root = BitMapBackend::with_buffer(&mut pixels, (w, h)).into_drawing_area();
                root.fill(&WHITE).map_err(drawing)?;
                figure.draw(&root)?;
                root.present().map_err(drawing)?;
            }
            encode_png(&pixels, w, h)
        }
        Format::Svg => {
            let mut text = String::new();
            {
                let root = SVGBackend::with_string(&mut text, (w, h)).into_drawing_area();
                root.fill(&WHITE).map_err(drawing)?;
                figure.draw(&root)?;
                root.present().map_err(drawing)?;
            }
            Ok(text.into_bytes())
        }
    }
}

/// Renders `figure` and writes it to `path`, in the format its extension names.
pub fn save(figure: &impl Figure, path: &Path) -> Result<()> {
    let bytes = render(figure, Format::of(path)?)?;
    write_bytes(path, &bytes)
}

/// Writes `bytes` to `path`, turning an unwritable path into a bad-input error.
pub fn write_bytes(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).map_err(|e| bad_input(format!("cannot write {}: {e}", path.display())))
}

fn encode_png(rgb: &[u8], w: u32, h: u32) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut out, w, h);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        // Charts are large flat areas: the strongest compression with per-line filters keeps them small
        // enough to commit as docs, for a few milliseconds more.
        encoder.set_compression(png::Compression::Best);
        encoder.set_adaptive_filter(png::AdaptiveFilterType::Adaptive);
        let mut writer = encoder.write_header().map_err(|e| anyhow!("encoding png: {e}"))?;
        writer.write_image_data(rgb).map_err(|e| anyhow!("encoding png: {e}"))?;
    }
    Ok(out)
}

/// A text style of the chart font.
pub fn font(size: f64) -> TextStyle<'static> {
    (FONT, size).into_font().into()
}

pub fn bold(size: f64) -> TextStyle<'static> {
    (FONT, size, FontStyle::Bold).into_font().into()
}

/// A colour from 0xRRGGBB, so palettes read like the colour tables they come from.
pub const fn hex(rgb: u32) -> RGBColor {
    RGBColor((rgb >> 16) as u8, (rgb >> 8) as u8, rgb as u8)
}

/// The width in pixels of `text` in the chart font at `size`, for layouts that must be known before drawing.
pub fn text_width(text: &str, size: f64) -> u32 {
    styled_width(text, size, FontStyle::Normal)
}

fn styled_width(text: &str, size: f64, style: FontStyle) -> u32 {
    register_fonts();
    FontDesc::new(FontFamily::Name(FONT), size, style).box_size(text).map_or(0, |(w, _)| w)
}

/// Breaks `text` into lines no wider than `width` pixels at spaces (a word wider than the line stays whole),
/// so titles stay readable on narrow charts instead of running off the edge.
pub fn wrap(text: &str, size: f64, bold: bool, width: u32) -> Vec<String> {
    let style = if bold { FontStyle::Bold } else { FontStyle::Normal };
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let candidate = if line.is_empty() { word.to_string() } else { format!("{line} {word}") };
        if !line.is_empty() && styled_width(&candidate, size, style) > width {
            lines.push(std::mem::replace(&mut line, word.to_string()));
        } else {
            line = candidate;
        }
    }
    lines.push(line);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_breaks_lines_only_when_needed() {
        let text = "causal mask: batch 1, seqlen 1024; costs: compute 1, reduce 0.25";
        assert_eq!(wrap(text, 14.0, false, 10_000), [text]);
        let lines = wrap(text, 14.0, false, 200);
        assert!(lines.len() > 1, "{lines:?}");
        assert_eq!(lines.join(" "), text);
        assert!(lines.iter().all(|l| !l.ends_with(' ') && text_width(l, 14.0) <= 200), "{lines:?}");
    }

    #[test]
    fn formats_come_from_extensions() {
        assert_eq!(Format::of(Path::new("a/b.PNG")).unwrap(), Format::Png);
        assert_eq!(Format::of(Path::new("b.svg")).unwrap(), Format::Svg);
        assert!(Format::of(Path::new("b.jpeg")).is_err());
        assert!(Format::of(Path::new("png")).is_err());
    }
}
