//! Rasterizes the report's SVG charts to PNG with resvg (pure Rust, no
//! system libraries). Text uses the system's fonts (DejaVu Sans when
//! present); without any font the PNG still has every shape but no labels.

/// Why a chart could not be rasterized.
#[derive(Debug, thiserror::Error)]
pub enum PngError {
    /// The SVG did not parse.
    #[error("invalid SVG: {0}")]
    Svg(String),
    /// The image has no area.
    #[error("empty image")]
    Empty,
    /// Encoding the PNG failed.
    #[error("PNG encoding failed: {0}")]
    Encode(String),
}

/// Renders an SVG document to PNG bytes at twice its nominal size.
pub fn rasterize(svg: &str) -> Result<Vec<u8>, PngError> {
    use resvg::{tiny_skia, usvg};
    use std::sync::OnceLock;
    static FONTS: OnceLock<std::sync::Arc<usvg::fontdb::Database>> = OnceLock::new();
    let fonts = FONTS.get_or_init(|| {
        let mut db = usvg::fontdb::Database::new();
        db.load_system_fonts();
        db.set_sans_serif_family("DejaVu Sans");
        std::sync::Arc::new(db)
    });
    let options = usvg::Options {
        fontdb: fonts.clone(),
        ..Default::default()
    };
    let tree = usvg::Tree::from_str(svg, &options).map_err(|e| PngError::Svg(e.to_string()))?;
    let scale = 2.0;
    let size = tree.size().to_int_size().scale_by(scale).ok_or(PngError::Empty)?;
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height()).ok_or(PngError::Empty)?;
    resvg::render(
        &tree,
        tiny_skia::Transform::from_scale(scale, scale),
        &mut pixmap.as_mut(),
    );
    pixmap.encode_png().map_err(|e| PngError::Encode(e.to_string()))
}
