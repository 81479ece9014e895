//! Figures, one function per kind, each taking plain data and writing a PNG or SVG file (chosen
//! by the path's extension, see [`ImageFormat`]).
//!
//! | Function | Figure |
//! |---|---|
//! | [`samples_over_data`] | samples over data on (PC1, PC2), with marginal histograms |
//! | [`mode_jumps`] | mean cumulative mode jumps per chain against Gibbs sweeps, several samplers |
//! | [`log_likelihood`] | train / test log-likelihood against parameter updates |
//! | [`swap_acceptance`] | swap acceptance per ladder pair and round-trip rates of PT runs |
//! | [`log_z_versus_cost`] | \\(\log Z\\) estimates against their cost, with the exact value |
//! | [`tethered_log_density`] | \\(\ln p(\hat m)\\) of Tethered Monte Carlo against the target \\(\hat m\\) |
//! | [`image_grid`] | configurations drawn as images, one grid per panel (samples, data, one chain over time) |
//!
//! The book's figures are drawn by its examples into the directory named by the environment
//! variable [`FIGURES_ENV`] ([`book_figure`]).
//!
//! Drawing uses only pure-Rust back ends: text is rendered with `ab_glyph` from the DejaVu Sans
//! font embedded in the binary (`assets/DejaVuSans.ttf`, Bitstream Vera licence in
//! `assets/LICENSE-DejaVu.txt`), registered before the first figure, so no system font library
//! (fontconfig, freetype) is needed. Files are written atomically
//! ([`ebm_io::write_atomically`]). Every function validates its input first: no data, a
//! non-finite value or an unknown extension is an [`Error`], never a panic.

mod table;
pub use table::Table;

use std::ops::Range;
use std::path::Path;
use std::sync::OnceLock;

use ebm_core::{Error, Result};
use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

/// The embedded font (DejaVu Sans 2.37).
static FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");
/// The family name the font is registered under.
const FONT_FAMILY: &str = "sans-serif";
/// The environment variable naming the directory where the book's examples write their
/// figures ([`book_figure`]); `.ci/book-check` sets it to `book/src/figures`.
pub const FIGURES_ENV: &str = "EBM_FIGURES";

/// Where an example writes the book's figure `name` (e.g. `tethered-profile.svg`): in the
/// directory named by [`FIGURES_ENV`] when it is set, otherwise nowhere (`None`: the example
/// draws nothing). The book's figures are regenerated this way in CI, so that none drifts from
/// the code that draws it.
pub fn book_figure(name: &str) -> Option<std::path::PathBuf> {
    std::env::var_os(FIGURES_ENV).map(|dir| Path::new(&dir).join(name))
}

/// At most this many points of each set are drawn in scatter plots.
pub const MAX_SCATTER_POINTS: usize = 5000;

/// Registers the embedded font with plotters, once per process.
fn register_font() -> Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        plotters::style::register_font(FONT_FAMILY, FontStyle::Normal, FONT).is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidParameter {
            name: "embedded font".into(),
            reason: "the embedded DejaVu Sans font could not be parsed".into(),
        })
    }
}

/// The image formats figures are written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageFormat {
    /// Portable Network Graphics (8-bit RGB).
    Png,
    /// Scalable Vector Graphics.
    Svg,
}

impl ImageFormat {
    /// The format named by the extension of `path` (`.png` or `.svg`, any case).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for any other extension.
    pub fn from_path(path: &Path) -> Result<Self> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("png") => Ok(Self::Png),
            Some("svg") => Ok(Self::Svg),
            _ => Err(Error::InvalidParameter {
                name: format!("figure file {}", path.display()),
                reason: "the extension must be .png or .svg".into(),
            }),
        }
    }
}

/// A named curve: points \\((x, y)\\) in drawing order.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend entry.
    pub label: String,
    /// The points.
    pub points: Vec<(f64, f64)>,
}

/// The exchange statistics of one parallel-tempering run, for [`swap_acceptance`].
#[derive(Clone, Debug, PartialEq)]
pub struct SwapRun {
    /// Legend entry.
    pub label: String,
    /// Mean acceptance probability of the exchange between rungs \\(k\\) and \\(k+1\\), for
    /// each \\(k\\) (`None` for a pair never proposed).
    pub acceptance: Vec<Option<f64>>,
    /// Measured round trips per system and round.
    pub round_trip_rate: f64,
    /// The DEO round-trip rate under perfect exploration,
    /// \\(1/(2 + 2\sum_k r_k/(1 - r_k))\\) with rejection rates \\(r_k\\), if known.
    pub ideal_deo_round_trip_rate: Option<f64>,
}

// ---------------------------------------------------------------------------------------------
// Public figure functions
// ---------------------------------------------------------------------------------------------

/// Samples over data in the plane of two principal components (points, data in blue, samples
/// in red), with the marginal histogram of each coordinate above and to the right (40 bins over
/// the common range, fractions of each set per bin).
///
/// `data` and `samples` are the projections \\((u_1 \cdot (x - \mu), u_2 \cdot (x - \mu))\\);
/// `samples_label` names the samples in the legend (e.g. the sampler) and `axis_labels` the
/// two coordinates. At most [`MAX_SCATTER_POINTS`] points of each set
/// are drawn (an even stride through the set); the histograms use every point.
///
/// # Errors
/// [`Error::InvalidParameter`] for an empty set or a bad extension, [`Error::NonFinite`] for a
/// non-finite coordinate, [`Error::Io`] if the file cannot be written.
pub fn samples_over_data(
    path: &Path,
    data: &[(f64, f64)],
    samples: &[(f64, f64)],
    samples_label: &str,
    axis_labels: (&str, &str),
) -> Result<()> {
    for (what, set) in [("data", data), ("samples", samples)] {
        if set.is_empty() {
            return Err(empty(what));
        }
        check_points(what, set)?;
    }
    save(
        path,
        (900, 900),
        &Scatter {
            data,
            samples,
            samples_label,
            axis_labels,
        },
    )
}

/// The mean cumulative number of mode jumps per chain (y) against the cost in Gibbs sweeps per
/// chain (x), one curve per sampler: the mixing comparison of the PTT paper's Fig. 4.
///
/// # Errors
/// As [`samples_over_data`], for no series or an empty one.
pub fn mode_jumps(path: &Path, series: &[Series]) -> Result<()> {
    let chart = LineChart {
        title: "Mode jumps".into(),
        x_label: "Gibbs sweeps per chain",
        y_label: "mean cumulative jumps per chain",
        series,
        log_x: false,
        hline: None,
        legend: SeriesLabelPosition::UpperLeft,
    };
    chart.check()?;
    save(path, (900, 600), &chart)
}

/// Train and test log-likelihood (y) against the number of parameter updates (x), one curve
/// per series (e.g. `train`, `test`).
///
/// # Errors
/// As [`mode_jumps`].
pub fn log_likelihood(path: &Path, series: &[Series]) -> Result<()> {
    line_chart(
        path,
        "Log-likelihood",
        ("parameter updates", "mean log-likelihood"),
        series,
    )
}

/// Curves of any columns of a table: `series` (y) against a common x, under `title` with the
/// axis labels `x_label` and `y_label` (e.g. the gradient norm of a training log).
///
/// # Errors
/// As [`mode_jumps`].
pub fn line_chart(
    path: &Path,
    title: &str,
    (x_label, y_label): (&str, &str),
    series: &[Series],
) -> Result<()> {
    let chart = LineChart {
        title: title.into(),
        x_label,
        y_label,
        series,
        log_x: false,
        hline: None,
        legend: SeriesLabelPosition::LowerRight,
    };
    chart.check()?;
    save(path, (900, 600), &chart)
}

/// Estimates of \\(\log Z\\) (y) against their cost (x, logarithmic if `log_cost`), one curve
/// per estimator, with the exact value as a horizontal line when known.
///
/// # Errors
/// As [`mode_jumps`], and [`Error::InvalidParameter`] for a cost \\(\le 0\\) on a logarithmic
/// axis.
pub fn log_z_versus_cost(
    path: &Path,
    series: &[Series],
    exact: Option<f64>,
    log_cost: bool,
) -> Result<()> {
    let chart = LineChart {
        title: "log Z estimates".into(),
        x_label: "cost",
        y_label: "log Z",
        series,
        log_x: log_cost,
        hline: exact.map(|v| (v, format!("exact log Z = {v:.4}"))),
        legend: SeriesLabelPosition::LowerRight,
    };
    chart.check()?;
    if let Some(v) = exact {
        Error::check_finite("exact log Z", &[v])?;
    }
    save(path, (900, 600), &chart)
}

/// The tethered log-probability \\(\ln p(\hat m)\\) (y) against the tether target
/// \\(\hat m\\) (x), one curve per series, under `title` (e.g. the barrier found).
///
/// # Errors
/// As [`mode_jumps`].
pub fn tethered_log_density(path: &Path, title: &str, series: &[Series]) -> Result<()> {
    line_chart(path, title, ("tether target m_hat", "ln p(m_hat)"), series)
}

/// The swap acceptance rate of every pair of neighbouring rungs \\((k, k+1)\\) (x: the lower
/// rung \\(k\\)), one curve per run; each run's legend entry gives its measured round trips per
/// system and round and, when known, the DEO rate under perfect exploration.
///
/// # Errors
/// As [`samples_over_data`]: no run, a run without pairs, a non-finite rate or an acceptance
/// outside \\([0, 1]\\).
pub fn swap_acceptance(path: &Path, runs: &[SwapRun]) -> Result<()> {
    if runs.is_empty() {
        return Err(empty("runs"));
    }
    for r in runs {
        if r.acceptance.is_empty() {
            return Err(Error::InvalidParameter {
                name: format!("run \"{}\"", r.label),
                reason: "no pair of rungs (a ladder of one rung)".into(),
            });
        }
        let a: Vec<f64> = r.acceptance.iter().flatten().copied().collect();
        Error::check_finite(&format!("acceptance rates of \"{}\"", r.label), &a)?;
        if let Some(x) = a.iter().find(|x| !(0.0..=1.0).contains(*x)) {
            return Err(Error::InvalidParameter {
                name: format!("acceptance rates of \"{}\"", r.label),
                reason: format!("{x} is not in [0, 1]"),
            });
        }
        let mut rates = vec![r.round_trip_rate];
        rates.extend(r.ideal_deo_round_trip_rate);
        Error::check_finite(&format!("round-trip rates of \"{}\"", r.label), &rates)?;
    }
    save(path, (900, 600), &Swaps { runs })
}

/// How the values of a configuration become pixel colours, for [`image_grid`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PixelValues {
    /// Values in \\([0, 1]\\) (binary units or their means): 0 white, 1 black.
    Binary,
    /// Values in \\([-1, 1]\\) (spin units or their means): −1 white, +1 black.
    Spin,
    /// Potts states `0..q`, one colour each (values are the state codes).
    Categorical {
        /// Number of states.
        q: usize,
    },
    /// Real values: grey levels from white at `lo` to black at `hi`.
    Real {
        /// The value drawn white.
        lo: f64,
        /// The value drawn black.
        hi: f64,
    },
}

impl PixelValues {
    /// The colour of value `v`.
    fn colour(self, v: f64) -> RGBColor {
        let grey = |t: f64| {
            let g = (255.0 * (1.0 - t.clamp(0.0, 1.0))).round() as u8;
            RGBColor(g, g, g)
        };
        match self {
            PixelValues::Binary => grey(v),
            PixelValues::Spin => grey((v + 1.0) / 2.0),
            PixelValues::Real { lo, hi } => grey(if hi > lo { (v - lo) / (hi - lo) } else { 0.5 }),
            PixelValues::Categorical { q } => state_colour(v.round().max(0.0) as usize, q),
        }
    }

    /// Words for the figure's note, e.g. `{0,1}: white 0, black 1`.
    fn legend(self) -> String {
        match self {
            PixelValues::Binary => "values in [0, 1]: white 0, black 1".into(),
            PixelValues::Spin => "values in [-1, 1]: white -1, black +1".into(),
            PixelValues::Real { lo, hi } => {
                format!("real values: white {}, black {}", tick(&lo), tick(&hi))
            }
            PixelValues::Categorical { q } => format!("{q} Potts states, one colour each"),
        }
    }
}

/// The colour of Potts state `state` of `q`: the series palette for `q <= 8`, evenly spaced
/// hues beyond.
fn state_colour(state: usize, q: usize) -> RGBColor {
    if q <= 8 {
        return colour(state);
    }
    let (r, g, b) = HSLColor((state % q) as f64 / q as f64, 0.65, 0.5).rgb();
    RGBColor(r, g, b)
}

/// One grid of [`image_grid`]: configurations with a title, each optionally captioned.
#[derive(Clone, Debug, PartialEq)]
pub struct ImagePanel {
    /// Title above the grid (e.g. the sampler).
    pub title: String,
    /// The configurations, each `height * width` values in row-major order.
    pub images: Vec<Vec<f64>>,
    /// A caption under each image (e.g. its step), or empty for none.
    pub captions: Vec<String>,
}

/// Configurations drawn as `height x width` images (row-major, pixel `(r, c)` is value
/// `r * width + c`), `columns` images per row, one grid per panel side by side under a common
/// note saying how values map to colours.
///
/// # Errors
/// [`Error::InvalidParameter`] for no panel, an empty panel, an image of the wrong size,
/// captions that do not match the images, a zero size or a bad extension;
/// [`Error::NonFinite`] for a non-finite value; [`Error::Io`] if the file cannot be written.
pub fn image_grid(
    path: &Path,
    panels: &[ImagePanel],
    (height, width): (usize, usize),
    columns: usize,
    values: PixelValues,
) -> Result<()> {
    let bad = |name: String, reason: String| Error::InvalidParameter { name, reason };
    if panels.is_empty() {
        return Err(empty("panels"));
    }
    if height == 0 || width == 0 || columns == 0 {
        return Err(bad(
            "image grid".into(),
            format!("{height} x {width} images, {columns} columns: every size must be >= 1"),
        ));
    }
    for p in panels {
        if p.images.is_empty() {
            return Err(empty(&format!("panel \"{}\"", p.title)));
        }
        if let Some((i, im)) = p
            .images
            .iter()
            .enumerate()
            .find(|(_, im)| im.len() != height * width)
        {
            return Err(bad(
                format!("image {} of panel \"{}\"", i + 1, p.title),
                format!(
                    "{} values, expected {height} x {width} = {}",
                    im.len(),
                    height * width
                ),
            ));
        }
        if !p.captions.is_empty() && p.captions.len() != p.images.len() {
            return Err(bad(
                format!("captions of panel \"{}\"", p.title),
                format!(
                    "{} captions for {} images",
                    p.captions.len(),
                    p.images.len()
                ),
            ));
        }
        let flat: Vec<f64> = p.images.iter().flatten().copied().collect();
        Error::check_finite(&format!("images of panel \"{}\"", p.title), &flat)?;
    }
    let layout = GridLayout::new(panels, (height, width), columns);
    save(
        path,
        layout.size(panels.len()),
        &Grids {
            panels,
            values,
            layout,
        },
    )
}

/// Pixel geometry of [`image_grid`]: every panel has the same size.
#[derive(Clone, Copy, Debug)]
struct GridLayout {
    shape: (usize, usize),
    columns: usize,
    rows: usize,
    /// Screen pixels per image pixel.
    scale: usize,
    /// Height of a caption line under each image (0 without captions).
    caption: usize,
}

/// Space between images, around panels, and for the titles.
const GAP: usize = 6;
const MARGIN: usize = 20;
const TITLE: usize = 40;
const NOTE: usize = 30;

impl GridLayout {
    fn new(panels: &[ImagePanel], shape: (usize, usize), columns: usize) -> Self {
        let most = panels.iter().map(|p| p.images.len()).max().unwrap_or(1);
        let columns = columns.min(most);
        // Images about 64 screen pixels wide, at least 2 pixels per value.
        let scale = (64 / shape.0.max(shape.1)).max(2);
        let caption = if panels.iter().any(|p| !p.captions.is_empty()) {
            16
        } else {
            0
        };
        Self {
            shape,
            columns,
            rows: most.div_ceil(columns),
            scale,
            caption,
        }
    }

    /// Screen size of one image cell, caption included.
    fn cell(&self) -> (usize, usize) {
        let w = (self.shape.1 * self.scale).max(if self.caption > 0 { 48 } else { 0 });
        (w + GAP, self.shape.0 * self.scale + self.caption + GAP)
    }

    fn panel_size(&self) -> (usize, usize) {
        let (cw, ch) = self.cell();
        (
            (self.columns * cw + 2 * MARGIN).max(220),
            self.rows * ch + 2 * MARGIN + TITLE,
        )
    }

    fn size(&self, panels: usize) -> (u32, u32) {
        let (w, h) = self.panel_size();
        ((w * panels) as u32, (h + NOTE) as u32)
    }
}

/// The panels of [`image_grid`].
struct Grids<'a> {
    panels: &'a [ImagePanel],
    values: PixelValues,
    layout: GridLayout,
}

impl Figure for Grids<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        root.fill(&WHITE).map_err(text)?;
        let l = &self.layout;
        let (pw, ph) = l.panel_size();
        let (cw, ch) = l.cell();
        let (h, w) = l.shape;
        let s = l.scale as i32;
        for (k, panel) in self.panels.iter().enumerate() {
            let x0 = (k * pw + MARGIN) as i32;
            root.draw(&Text::new(
                panel.title.clone(),
                (x0, MARGIN as i32),
                font(20),
            ))
            .map_err(text)?;
            for (i, image) in panel.images.iter().enumerate() {
                let cx = x0 + ((i % l.columns) * cw) as i32;
                let cy = (MARGIN + TITLE + (i / l.columns) * ch) as i32;
                for r in 0..h {
                    for c in 0..w {
                        let (px, py) = (cx + c as i32 * s, cy + r as i32 * s);
                        root.draw(&Rectangle::new(
                            [(px, py), (px + s, py + s)],
                            self.values.colour(image[r * w + c]).filled(),
                        ))
                        .map_err(text)?;
                    }
                }
                root.draw(&Rectangle::new(
                    [(cx - 1, cy - 1), (cx + w as i32 * s, cy + h as i32 * s)],
                    RGBColor(160, 160, 160).stroke_width(1),
                ))
                .map_err(text)?;
                if let Some(caption) = panel.captions.get(i) {
                    let y = cy + h as i32 * s + 2;
                    root.draw(&Text::new(caption.clone(), (cx, y), font(12)))
                        .map_err(text)?;
                }
            }
        }
        root.draw(&Text::new(
            self.values.legend(),
            (MARGIN as i32, (ph + NOTE / 4) as i32),
            font(14),
        ))
        .map_err(text)?;
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------------------

/// A figure that draws itself on any plotters back end.
trait Figure {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>;
}

/// Formats a plotters error as text.
fn text<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// Renders `fig` at `size` pixels and writes it to `path` atomically, in the format of the
/// extension.
fn save(path: &Path, size: (u32, u32), fig: &impl Figure) -> Result<()> {
    let format = ImageFormat::from_path(path)?;
    register_font()?;
    let failed = |reason: String| Error::Io {
        path: path.to_path_buf(),
        source: std::io::Error::other(format!("drawing failed: {reason}")),
    };
    let bytes = match format {
        ImageFormat::Png => {
            let mut rgb = vec![0u8; size.0 as usize * size.1 as usize * 3];
            {
                let root = BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area();
                fig.draw(&root).map_err(failed)?;
                root.present().map_err(|e| failed(text(e)))?;
            }
            encode_png(&rgb, size).map_err(|e| failed(e.to_string()))?
        }
        ImageFormat::Svg => {
            let mut svg = String::new();
            {
                let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
                fig.draw(&root).map_err(failed)?;
                root.present().map_err(|e| failed(text(e)))?;
            }
            svg.into_bytes()
        }
    };
    ebm_io::write_atomically(path, |w| w.write_all(&bytes))
}

fn encode_png(rgb: &[u8], (w, h): (u32, u32)) -> std::result::Result<Vec<u8>, png::EncodingError> {
    let mut out = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut out, w, h);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header()?;
        writer.write_image_data(rgb)?;
    }
    Ok(out)
}

fn empty(what: &str) -> Error {
    Error::InvalidParameter {
        name: what.into(),
        reason: "nothing to draw (no points)".into(),
    }
}

fn check_points(what: &str, points: &[(f64, f64)]) -> Result<()> {
    let flat: Vec<f64> = points.iter().flat_map(|&(x, y)| [x, y]).collect();
    Error::check_finite(&format!("{what} (x, y pairs, flattened)"), &flat)
}

/// `[lo, hi]` of `values`, widened by 5 % on each side (or by 1 if the range is a point).
fn padded_range(values: impl Iterator<Item = f64>) -> Range<f64> {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
        (a.min(v), b.max(v))
    });
    if !(lo.is_finite() && hi.is_finite()) {
        return 0.0..1.0;
    }
    let pad = if hi > lo {
        0.05 * (hi - lo)
    } else {
        0.5 * lo.abs().max(1.0)
    };
    (lo - pad)..(hi + pad)
}

/// The colour of series `i`.
fn colour(i: usize) -> RGBColor {
    const COLOURS: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(214, 39, 40),
        RGBColor(44, 160, 44),
        RGBColor(255, 127, 14),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(23, 190, 207),
    ];
    COLOURS[i % COLOURS.len()]
}

/// A tick label: integers without decimals, other values with at most 3 decimals, very large
/// or very small ones in scientific notation.
/// A tick label: integers as such, up to three decimals, scientific notation outside
/// \\([10^{-3}, 10^5)\\); a value within \\(10^{-12}\\) of 0 (a rounding error of the tick
/// positions, e.g. \\(-2.2 \cdot 10^{-16}\\) on an axis through 0) is written 0.
fn tick(v: &f64) -> String {
    let v = *v;
    let a = v.abs();
    if a < 1e-12 {
        "0".into()
    } else if !(1e-3..1e5).contains(&a) {
        format!("{v:.1e}")
    } else if (v - v.round()).abs() < 1e-9 * a.max(1.0) {
        format!("{}", v.round() as i64)
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

fn font(size: u32) -> TextStyle<'static> {
    (FONT_FAMILY, size).into_font().into()
}

/// Line plots of several series.
struct LineChart<'a> {
    title: String,
    x_label: &'a str,
    y_label: &'a str,
    series: &'a [Series],
    log_x: bool,
    hline: Option<(f64, String)>,
    legend: SeriesLabelPosition,
}

impl LineChart<'_> {
    fn check(&self) -> Result<()> {
        if self.series.is_empty() {
            return Err(empty("series"));
        }
        for s in self.series {
            if s.points.is_empty() {
                return Err(empty(&format!("series \"{}\"", s.label)));
            }
            check_points(&format!("series \"{}\"", s.label), &s.points)?;
            if self.log_x
                && let Some(&(x, _)) = s.points.iter().find(|p| p.0 <= 0.0)
            {
                return Err(Error::InvalidParameter {
                    name: format!("series \"{}\"", s.label),
                    reason: format!(
                        "x = {x} cannot be drawn on a logarithmic axis (x must be > 0)"
                    ),
                });
            }
        }
        Ok(())
    }

    fn draw_on<DB, X>(
        &self,
        root: &DrawingArea<DB, Shift>,
        x: X,
        y: Range<f64>,
    ) -> Result<(), String>
    where
        DB: DrawingBackend,
        X: AsRangedCoord<Value = f64>,
        X::CoordDescType: ValueFormatter<f64>,
    {
        let mut chart = ChartBuilder::on(root)
            .caption(&self.title, font(26))
            .margin(15)
            .x_label_area_size(50)
            .y_label_area_size(80)
            .build_cartesian_2d(x, y)
            .map_err(text)?;
        chart
            .configure_mesh()
            .x_label_formatter(&tick)
            .y_label_formatter(&tick)
            .x_desc(self.x_label)
            .y_desc(self.y_label)
            .label_style(font(15))
            .axis_desc_style(font(17))
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(text)?;
        for (i, s) in self.series.iter().enumerate() {
            let c = colour(i);
            chart
                .draw_series(LineSeries::new(s.points.iter().copied(), c.stroke_width(2)))
                .map_err(text)?
                .label(s.label.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 24, y)], c.stroke_width(2))
                });
            if s.points.len() <= 60 {
                chart
                    .draw_series(s.points.iter().map(|&p| Circle::new(p, 3, c.filled())))
                    .map_err(text)?;
            }
        }
        if let Some((v, label)) = &self.hline {
            let (x0, x1) = {
                let r = chart.x_range();
                (r.start, r.end)
            };
            chart
                .draw_series(DashedLineSeries::new(
                    [(x0, *v), (x1, *v)],
                    8,
                    5,
                    BLACK.stroke_width(2),
                ))
                .map_err(text)?
                .label(label.clone())
                .legend(|(x, y)| {
                    PathElement::new(vec![(x, y), (x + 24, y)], BLACK.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .label_font(font(15))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(self.legend.clone())
            .draw()
            .map_err(text)?;
        Ok(())
    }
}

impl Figure for LineChart<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        root.fill(&WHITE).map_err(text)?;
        let xs = || {
            self.series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.0))
        };
        let ys = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .chain(self.hline.as_ref().map(|h| h.0));
        let y = padded_range(ys);
        if self.log_x {
            let lo = xs().fold(f64::INFINITY, f64::min);
            let hi = xs().fold(f64::NEG_INFINITY, f64::max);
            let (lo, hi) = if hi > lo {
                (lo / 1.2, hi * 1.2)
            } else {
                (lo / 2.0, hi * 2.0)
            };
            self.draw_on(root, (lo..hi).log_scale(), y)
        } else {
            self.draw_on(root, padded_range(xs()), y)
        }
    }
}

/// Keeps at most `max` points, by an even stride.
fn thin(points: &[(f64, f64)], max: usize) -> impl Iterator<Item = (f64, f64)> + '_ {
    let stride = points.len().div_ceil(max).max(1);
    points.iter().step_by(stride).copied()
}

/// Samples over data with marginal histograms.
struct Scatter<'a> {
    data: &'a [(f64, f64)],
    samples: &'a [(f64, f64)],
    samples_label: &'a str,
    axis_labels: (&'a str, &'a str),
}

const BINS: usize = 40;

impl Figure for Scatter<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        root.fill(&WHITE).map_err(text)?;
        let (w, h) = root.dim_in_pixel();
        let (wx, hy) = ((w * 3 / 4) as i32, (h / 4) as i32);
        let areas = root.split_by_breakpoints([wx], [hy]);
        let (top, corner, main, side) = (&areas[0], &areas[1], &areas[2], &areas[3]);
        let all = || self.data.iter().chain(self.samples.iter());
        let xr = padded_range(all().map(|p| p.0));
        let yr = padded_range(all().map(|p| p.1));
        let data_colour = colour(0);
        let sample_colour = colour(1);

        // Main panel: the points.
        let mut chart = ChartBuilder::on(main)
            .margin(10)
            .x_label_area_size(50)
            .y_label_area_size(70)
            .build_cartesian_2d(xr.clone(), yr.clone())
            .map_err(text)?;
        chart
            .configure_mesh()
            .x_label_formatter(&tick)
            .y_label_formatter(&tick)
            .x_desc(self.axis_labels.0)
            .y_desc(self.axis_labels.1)
            .label_style(font(15))
            .axis_desc_style(font(17))
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(text)?;
        chart
            .draw_series(
                thin(self.data, MAX_SCATTER_POINTS)
                    .map(|p| Circle::new(p, 2, data_colour.mix(0.35).filled())),
            )
            .map_err(text)?
            .label(format!("data ({})", self.data.len()))
            .legend(move |(x, y)| Circle::new((x + 8, y), 4, data_colour.filled()));
        chart
            .draw_series(
                thin(self.samples, MAX_SCATTER_POINTS)
                    .map(|p| Circle::new(p, 2, sample_colour.mix(0.6).filled())),
            )
            .map_err(text)?
            .label(format!("{} ({})", self.samples_label, self.samples.len()))
            .legend(move |(x, y)| Circle::new((x + 8, y), 4, sample_colour.filled()));
        chart
            .configure_series_labels()
            .label_font(font(15))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(text)?;

        // Marginal histograms: fractions per bin on the main panel's ranges.
        let hist = |pts: &[(f64, f64)], first: bool, r: &Range<f64>| {
            let v: Vec<f64> = pts.iter().map(|p| if first { p.0 } else { p.1 }).collect();
            ebm_data::metrics::histogram::histogram(&v, BINS, r.start, r.end)
        };
        let (hx_data, hx_samples) = (hist(self.data, true, &xr), hist(self.samples, true, &xr));
        let (hy_data, hy_samples) = (hist(self.data, false, &yr), hist(self.samples, false, &yr));
        let peak = hx_data
            .iter()
            .chain(&hx_samples)
            .chain(&hy_data)
            .chain(&hy_samples)
            .fold(0.0f64, |a, &b| a.max(b))
            * 1.1;
        let peak = if peak > 0.0 { peak } else { 1.0 };
        // The data's bars filled, the samples' outlined.
        let x_bars = [
            (hx_data.as_slice(), data_colour, true),
            (hx_samples.as_slice(), sample_colour, false),
        ];
        let y_bars = [
            (hy_data.as_slice(), data_colour, true),
            (hy_samples.as_slice(), sample_colour, false),
        ];
        marginal(top, Along::X, &xr, peak, x_bars)?;
        marginal(side, Along::Y, &yr, peak, y_bars)?;

        corner
            .draw(&Text::new("samples over data", (15, 40), font(20)))
            .map_err(text)?;
        corner
            .draw(&Text::new("on the data's PCA", (15, 70), font(16)))
            .map_err(text)?;
        Ok(())
    }
}

/// Which axis of the scatter plot a marginal histogram runs along.
#[derive(Clone, Copy)]
enum Along {
    /// Above the main panel: bins along x, fractions up.
    X,
    /// Beside the main panel: bins along y, fractions to the right.
    Y,
}

/// A marginal histogram of the scatter plot on `area`: for each of `bars` (the fraction per
/// bin of `range`, its colour, filled or outlined), a rectangle per non-empty bin, the
/// fractions on an axis from 0 to `peak`.
fn marginal<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    along: Along,
    range: &Range<f64>,
    peak: f64,
    bars: [(&[f64], RGBColor, bool); 2],
) -> Result<(), String> {
    let (x_area, y_area, xs, ys) = match along {
        Along::X => (0, 70, range.clone(), 0.0..peak),
        Along::Y => (50, 0, 0.0..peak, range.clone()),
    };
    let mut chart = ChartBuilder::on(area)
        .margin(10)
        .x_label_area_size(x_area)
        .y_label_area_size(y_area)
        .build_cartesian_2d(xs, ys)
        .map_err(text)?;
    let mut mesh = chart.configure_mesh();
    mesh.disable_x_mesh()
        .disable_y_mesh()
        .label_style(font(13))
        .axis_desc_style(font(15));
    match along {
        Along::X => mesh
            .y_label_formatter(&tick)
            .x_labels(0)
            .y_labels(3)
            .y_desc("fraction"),
        Along::Y => mesh
            .x_label_formatter(&tick)
            .y_labels(0)
            .x_labels(3)
            .x_desc("fraction"),
    };
    mesh.draw().map_err(text)?;
    let width = (range.end - range.start) / BINS as f64;
    for (hist, c, fill) in bars {
        chart
            .draw_series(
                hist.iter()
                    .enumerate()
                    .filter(|h| *h.1 > 0.0)
                    .map(|(b, &f)| {
                        let (a, z) = (
                            range.start + width * b as f64,
                            range.start + width * (b + 1) as f64,
                        );
                        let style = if fill {
                            c.mix(0.4).filled()
                        } else {
                            c.stroke_width(2)
                        };
                        let corners = match along {
                            Along::X => [(a, 0.0), (z, f)],
                            Along::Y => [(0.0, a), (f, z)],
                        };
                        Rectangle::new(corners, style)
                    }),
            )
            .map_err(text)?;
    }
    Ok(())
}

/// Swap acceptance and round trips.
struct Swaps<'a> {
    runs: &'a [SwapRun],
}

impl Figure for Swaps<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        root.fill(&WHITE).map_err(text)?;
        let pairs = self
            .runs
            .iter()
            .map(|r| r.acceptance.len())
            .max()
            .unwrap_or(1);
        let mut chart = ChartBuilder::on(root)
            .caption("Swap acceptance per pair", font(24))
            .margin(15)
            .x_label_area_size(50)
            .y_label_area_size(70)
            .build_cartesian_2d(-0.5..(pairs as f64 - 0.5), 0.0..1.05)
            .map_err(text)?;
        chart
            .configure_mesh()
            .y_label_formatter(&tick)
            .x_desc("lower rung k of the pair (k, k+1)")
            .y_desc("acceptance rate")
            .x_labels(pairs.min(20))
            .x_label_formatter(&|x| format!("{}", x.round() as i64))
            .label_style(font(15))
            .axis_desc_style(font(17))
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(text)?;
        for (i, r) in self.runs.iter().enumerate() {
            let c = colour(i);
            let pts: Vec<(f64, f64)> = r
                .acceptance
                .iter()
                .enumerate()
                .filter_map(|(k, a)| a.map(|a| (k as f64, a)))
                .collect();
            let ideal = r
                .ideal_deo_round_trip_rate
                .map_or(String::new(), |v| format!(" (ideal DEO {})", rate(v)));
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))
                .map_err(text)?
                .label(format!(
                    "{}: {} round trips per system and round{ideal}",
                    r.label,
                    rate(r.round_trip_rate)
                ))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 24, y)], c.stroke_width(2))
                });
            chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, 4, c.filled())))
                .map_err(text)?;
        }
        chart
            .configure_series_labels()
            .label_font(font(14))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::LowerLeft)
            .draw()
            .map_err(text)?;
        Ok(())
    }
}

/// A rate with four significant digits.
fn rate(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else {
        format!("{v:.4}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series() -> Vec<Series> {
        vec![
            Series {
                label: "gibbs".into(),
                points: vec![(0.0, 0.0), (10.0, 0.5), (20.0, 0.7)],
            },
            Series {
                label: "pt".into(),
                points: vec![(0.0, 0.0), (10.0, 2.0), (20.0, 4.5)],
            },
        ]
    }

    /// Tick labels: rounding noise at 0 is 0, integers and decimals as written by hand.
    #[test]
    fn tick_labels_are_what_a_person_writes() {
        for (v, label) in [
            (-2.220446049250313e-16, "0"),
            (0.0, "0"),
            (3.0, "3"),
            (-0.25, "-0.25"),
            (1.0e6, "1.0e6"),
            (2.0e-4, "2.0e-4"),
        ] {
            assert_eq!(tick(&v), label, "{v}");
        }
    }

    #[test]
    fn every_figure_writes_png_and_svg() {
        let dir = tempfile::tempdir().unwrap();
        for ext in ["png", "svg"] {
            let p = |name: &str| dir.path().join(format!("{name}.{ext}"));
            let cloud: Vec<(f64, f64)> = (0..200)
                .map(|i| ((i as f64 * 0.37).sin(), (i as f64 * 0.11).cos()))
                .collect();
            samples_over_data(&p("scatter"), &cloud, &cloud[..50], "PT", ("PC1", "PC2")).unwrap();
            mode_jumps(&p("jumps"), &series()).unwrap();
            log_likelihood(&p("ll"), &series()).unwrap();
            let costs = vec![Series {
                label: "ais".into(),
                points: vec![(10.0, 1.0), (100.0, 1.4), (1000.0, 1.5)],
            }];
            log_z_versus_cost(&p("logz"), &costs, Some(1.52), true).unwrap();
            let runs = vec![
                SwapRun {
                    label: "deo".into(),
                    acceptance: vec![Some(0.9), None, Some(0.4)],
                    round_trip_rate: 0.05,
                    ideal_deo_round_trip_rate: Some(0.08),
                },
                SwapRun {
                    label: "seo".into(),
                    acceptance: vec![Some(0.8), Some(0.6)],
                    round_trip_rate: 0.02,
                    ideal_deo_round_trip_rate: None,
                },
            ];
            swap_acceptance(&p("swaps"), &runs).unwrap();
            for name in ["scatter", "jumps", "ll", "logz", "swaps"] {
                let bytes = std::fs::read(p(name)).unwrap();
                if ext == "png" {
                    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{name}");
                } else {
                    let s = String::from_utf8(bytes).unwrap();
                    assert!(s.starts_with("<svg"), "{name}");
                    assert!(s.contains("</svg>"), "{name}");
                }
            }
        }
        // The legend text is really there (SVG keeps text as text).
        let svg = std::fs::read_to_string(dir.path().join("jumps.svg")).unwrap();
        assert!(svg.contains("gibbs") && svg.contains("Gibbs sweeps per chain"));
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let png = dir.path().join("x.png");
        assert!(mode_jumps(&png, &[]).is_err());
        let nan = vec![Series {
            label: "bad".into(),
            points: vec![(0.0, f64::NAN)],
        }];
        let e = mode_jumps(&png, &nan).unwrap_err();
        assert!(matches!(e, Error::NonFinite { .. }), "{e}");
        let zero_cost = vec![Series {
            label: "ais".into(),
            points: vec![(0.0, 1.0)],
        }];
        assert!(log_z_versus_cost(&png, &zero_cost, None, true).is_err());
        assert!(log_z_versus_cost(&png, &zero_cost, None, false).is_ok());
        assert!(mode_jumps(&dir.path().join("x.jpg"), &series()).is_err());
        assert!(samples_over_data(&png, &[], &[(0.0, 0.0)], "s", ("a", "b")).is_err());
        let bad = SwapRun {
            label: "x".into(),
            acceptance: vec![Some(1.5)],
            round_trip_rate: 0.0,
            ideal_deo_round_trip_rate: None,
        };
        assert!(swap_acceptance(&png, &[bad]).is_err());
        // A missing directory is an I/O error naming the file.
        let e = mode_jumps(&dir.path().join("no/such/dir.png"), &series()).unwrap_err();
        assert!(e.to_string().contains("dir.png"), "{e}");
        // A single point (degenerate ranges) still draws.
        let one = vec![Series {
            label: "one".into(),
            points: vec![(3.0, 3.0)],
        }];
        log_likelihood(&png, &one).unwrap();
    }
}
