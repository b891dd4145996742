//! Line charts as inline SVG for the HTML reports: axes from zero with round ticks, one
//! polyline per series, a legend. Drawn by hand on purpose: the report must open with no
//! network access, and these plots need nothing a chart library would add.

use std::fmt::Write as _;

use crate::report::escape::escape;

/// One line of a chart.
pub struct Series {
    pub label: String,
    /// (x, y) pairs in drawing order; both are counts or rates, so never negative.
    pub points: Vec<(f64, f64)>,
}

pub struct Chart<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub series: Vec<Series>,
}

/// Okabe–Ito colours: distinguishable with the common colour-vision deficiencies.
const PALETTE: [&str; 7] = [
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000",
];
const WIDTH: f64 = 640.0;
const PLOT_HEIGHT: f64 = 220.0;
const LEFT: f64 = 68.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 34.0;
/// Below the plot: tick labels and the axis label.
const AXIS_BELOW: f64 = 46.0;
const LEGEND_ROW: f64 = 18.0;
const LEGEND_PER_ROW: usize = 3;
/// Points are marked as dots too when a line has this few of them.
const DOTS_UP_TO: usize = 40;

/// The chart as an `<svg>` element.
pub fn svg(chart: &Chart<'_>) -> String {
    let points = || chart.series.iter().flat_map(|s| s.points.iter());
    let (x_max, x_step) = axis(points().map(|p| p.0).fold(0.0, f64::max));
    let (y_max, y_step) = axis(points().map(|p| p.1).fold(0.0, f64::max));
    let legend_rows = chart.series.len().div_ceil(LEGEND_PER_ROW);
    let height = TOP + PLOT_HEIGHT + AXIS_BELOW + legend_rows as f64 * LEGEND_ROW + 6.0;
    let plot_width = WIDTH - LEFT - RIGHT;
    let px = |x: f64| LEFT + x / x_max * plot_width;
    let py = |y: f64| TOP + PLOT_HEIGHT - y / y_max * PLOT_HEIGHT;
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" role="img"><title>{title}</title><text class="chart-title" x="{LEFT}" y="20">{title}</text>"#,
        title = escape(chart.title),
    );
    for i in 0..=(y_max / y_step).round() as u32 {
        let y = f64::from(i) * y_step;
        let _ = write!(
            out,
            r#"<line class="grid" x1="{LEFT}" x2="{x2}" y1="{py}" y2="{py}"/><text class="tick" x="{tx}" y="{ty:.1}" text-anchor="end">{label}</text>"#,
            x2 = WIDTH - RIGHT,
            py = py(y),
            tx = LEFT - 6.0,
            ty = py(y) + 4.0,
            label = tick_label(y, y_step),
        );
    }
    for i in 0..=(x_max / x_step).round() as u32 {
        let x = f64::from(i) * x_step;
        let _ = write!(
            out,
            r#"<line class="axis" x1="{px:.1}" x2="{px:.1}" y1="{y1}" y2="{y2}"/><text class="tick" x="{px:.1}" y="{ty}" text-anchor="middle">{label}</text>"#,
            px = px(x),
            y1 = TOP + PLOT_HEIGHT,
            y2 = TOP + PLOT_HEIGHT + 4.0,
            ty = TOP + PLOT_HEIGHT + 17.0,
            label = tick_label(x, x_step),
        );
    }
    let _ = write!(
        out,
        r#"<line class="axis" x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{bottom}"/><line class="axis" x1="{LEFT}" x2="{right}" y1="{bottom}" y2="{bottom}"/><text class="axis-label" x="{cx}" y="{xl}" text-anchor="middle">{x_label}</text><text class="axis-label" transform="translate(14 {cy}) rotate(-90)" text-anchor="middle">{y_label}</text>"#,
        bottom = TOP + PLOT_HEIGHT,
        right = WIDTH - RIGHT,
        cx = LEFT + plot_width / 2.0,
        xl = TOP + PLOT_HEIGHT + 36.0,
        cy = TOP + PLOT_HEIGHT / 2.0,
        x_label = escape(chart.x_label),
        y_label = escape(chart.y_label),
    );
    if points().next().is_none() {
        let _ = write!(
            out,
            r#"<text class="tick" x="{cx}" y="{cy}" text-anchor="middle">no data</text>"#,
            cx = LEFT + plot_width / 2.0,
            cy = TOP + PLOT_HEIGHT / 2.0,
        );
    }
    for (i, series) in chart.series.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let coords: Vec<String> = series
            .points
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        let _ = write!(
            out,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"/>"#,
            coords.join(" ")
        );
        if series.points.len() <= DOTS_UP_TO {
            for &(x, y) in &series.points {
                let _ = write!(
                    out,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{colour}"/>"#,
                    px(x),
                    py(y)
                );
            }
        }
        let lx = LEFT + (i % LEGEND_PER_ROW) as f64 * (plot_width / LEGEND_PER_ROW as f64);
        let ly = TOP + PLOT_HEIGHT + AXIS_BELOW + (i / LEGEND_PER_ROW) as f64 * LEGEND_ROW + 4.0;
        let _ = write!(
            out,
            r#"<rect x="{lx:.1}" y="{ry:.1}" width="14" height="4" fill="{colour}"/><text class="legend" x="{tx:.1}" y="{ly:.1}">{label}</text>"#,
            ry = ly - 5.0,
            tx = lx + 20.0,
            label = escape(&series.label),
        );
    }
    out.push_str("</svg>");
    out
}

/// The axis end and tick step for data up to `max`: a step of 1, 2 or 5 times a power of ten
/// giving about five ticks, and the first multiple of it at or above `max`.
fn axis(max: f64) -> (f64, f64) {
    if !(max.is_finite() && max > 0.0) {
        return (1.0, 0.2);
    }
    let raw = max / 5.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * magnitude);
    ((max / step).ceil().max(1.0) * step, step)
}

/// `1500` → `1.5k`, `2000000` → `2M`, `1000` → `1k`; fractions get as many decimals as the
/// step needs.
fn tick_label(value: f64, step: f64) -> String {
    let (scaled, suffix, scaled_step) = [(1e9, "G"), (1e6, "M"), (1e3, "k")]
        .into_iter()
        .find(|(unit, _)| step >= *unit / 10.0 && value >= *unit)
        .map_or((value, "", step), |(unit, s)| {
            (value / unit, s, step / unit)
        });
    let decimals = if scaled_step >= 1.0 || scaled.fract() == 0.0 {
        0
    } else {
        (-scaled_step.log10()).ceil() as usize
    };
    format!("{scaled:.decimals$}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_axes_and_compact_ticks() {
        assert_eq!(axis(0.0), (1.0, 0.2));
        assert_eq!(axis(9_010.0), (10_000.0, 2_000.0));
        assert_eq!(axis(3.0), (3.0, 1.0));
        assert_eq!(tick_label(1_500.0, 500.0), "1.5k");
        assert_eq!(tick_label(2_000_000.0, 1_000_000.0), "2M");
        assert_eq!(tick_label(0.4, 0.2), "0.4");
        assert_eq!(tick_label(250.0, 50.0), "250");
        assert_eq!(tick_label(1_000.0, 200.0), "1k");
    }

    #[test]
    fn labels_are_escaped_and_every_series_is_drawn() {
        let chart = Chart {
            title: "<script>alert(1)</script>",
            x_label: "x & y",
            y_label: "\"y\"",
            series: vec![
                Series {
                    label: "a</text>".into(),
                    points: vec![(0.0, 0.0), (1.0, 2.0)],
                },
                Series {
                    label: "b".into(),
                    points: vec![(0.5, 1.0)],
                },
            ],
        };
        let svg = svg(&chart);
        assert!(!svg.contains("<script>"), "{svg}");
        assert!(svg.contains("&lt;script&gt;") && svg.contains("x &amp; y"));
        assert!(svg.contains("a&lt;/text&gt;"));
        assert_eq!(svg.matches("<polyline").count(), 2);
    }
}
