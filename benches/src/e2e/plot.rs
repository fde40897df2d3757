//! SVG plots of the scaling curves: for each workload of the scaling and history phases,
//! latency (p50 solid, p99 dashed, log scale) against catalog size or history depth (log
//! scale), one colour per backend.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::anyhow;
use plotters::prelude::*;

use super::report::{Measurement, Report};

const COLOURS: [RGBColor; 4] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
];

/// One line: `(x, p50 ms, p99 ms)` sorted by x.
type Points = Vec<(f64, f64, f64)>;

/// What a phase's curves are plotted against: its label and the value of a measurement.
type Axis = (&'static str, fn(&Measurement) -> u64);

fn axis(phase: &str) -> Option<Axis> {
    match phase {
        "scaling" => Some(("tables in the catalog", |m| m.catalog_tables)),
        "history" => Some(("commits of history", |m| m.history_depth)),
        _ => None,
    }
}

/// Writes `e2e-<phase>-<workload>.svg` for every curve with at least two points.
pub fn write_plots(report: &Report, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut curves: BTreeMap<(String, String), BTreeMap<String, Points>> = BTreeMap::new();
    for m in &report.results {
        let Some((_, x)) = axis(&m.phase) else {
            continue;
        };
        if m.figures.ops == 0 {
            continue;
        }
        let label = format!("{} ({} conn.)", m.workload, m.connections);
        curves
            .entry((m.phase.clone(), label))
            .or_default()
            .entry(m.backend.clone())
            .or_default()
            .push((x(m) as f64, m.figures.p50_ms, m.figures.p99_ms));
    }
    let mut written = Vec::new();
    for ((phase, label), mut lines) in curves {
        for points in lines.values_mut() {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        if lines.values().all(|p| p.len() < 2) {
            continue;
        }
        let workload = label.split(' ').next().unwrap_or("workload");
        let path = dir.join(format!("e2e-{phase}-{workload}.svg"));
        let (x_label, _) = axis(&phase).ok_or_else(|| anyhow!("no axis for {phase}"))?;
        draw(&path, &format!("{label}: {phase}"), x_label, &lines)?;
        written.push(path);
    }
    Ok(written)
}

fn draw(
    path: &Path,
    title: &str,
    x_label: &str,
    lines: &BTreeMap<String, Points>,
) -> anyhow::Result<()> {
    let fail = |e: &dyn std::fmt::Display| anyhow!("plotting {}: {e}", path.display());
    let all = lines.values().flatten();
    let (mut x_min, mut x_max, mut y_min, mut y_max) = (f64::MAX, 0f64, f64::MAX, 0f64);
    for &(x, p50, p99) in all {
        x_min = x_min.min(x);
        x_max = x_max.max(x);
        y_min = y_min.min(p50.min(p99));
        y_max = y_max.max(p50.max(p99));
    }
    let x_range = (x_min.max(1.0) / 1.5)..(x_max.max(1.0) * 1.5);
    // Room above the curves for the legend.
    let y_range = (y_min.max(1e-3) / 2.0)..(y_max.max(1e-3) * 6.0);

    let root = SVGBackend::new(path, (800, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(65)
        .build_cartesian_2d(x_range.log_scale(), y_range.log_scale())
        .map_err(|e| fail(&e))?;
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc("latency (ms)")
        .light_line_style(WHITE)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| match *y {
            y if y >= 10.0 => format!("{y:.0}"),
            y if y >= 1.0 => format!("{y:.1}"),
            y => format!("{y:.3}"),
        })
        .draw()
        .map_err(|e| fail(&e))?;
    for (i, (backend, points)) in lines.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        chart
            .draw_series(LineSeries::new(
                points.iter().map(|&(x, p50, _)| (x, p50)),
                colour.stroke_width(2),
            ))
            .map_err(|e| fail(&e))?
            .label(format!("{backend} p50"))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
            });
        chart
            .draw_series(DashedLineSeries::new(
                points.iter().map(|&(x, _, p99)| (x, p99)),
                6,
                4,
                colour.stroke_width(1),
            ))
            .map_err(|e| fail(&e))?
            .label(format!("{backend} p99"))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(1))
            });
        chart
            .draw_series(
                points
                    .iter()
                    .map(|&(x, p50, _)| Circle::new((x, p50), 3, colour.filled())),
            )
            .map_err(|e| fail(&e))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| fail(&e))?;
    root.present().map_err(|e| fail(&e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::e2e::options::Options;
    use crate::e2e::stats::{Basis, Tally};

    fn measurement(backend: &str, tables: u64, ms: u64) -> Measurement {
        let tally = Tally {
            latencies: vec![std::time::Duration::from_millis(ms); 4],
            ..Tally::default()
        };
        Measurement {
            backend: backend.to_owned(),
            phase: "scaling".to_owned(),
            workload: "load-hot".to_owned(),
            connections: 16,
            catalog_tables: tables,
            history_depth: 0,
            figures: tally.figures(std::time::Duration::from_secs(1), 16, Basis::Wall),
            lost: None,
            vs_baseline: None,
        }
    }

    #[test]
    fn curves_with_two_points_are_plotted() {
        let dir = tempfile::tempdir().unwrap();
        let mut report = Report::new(&Options::smoke(&[]), Path::new("pangolin"));
        report.results = vec![
            measurement("sqlite", 100, 1),
            measurement("sqlite", 1000, 2),
            measurement("postgres", 100, 3),
        ];
        let written = write_plots(&report, dir.path()).unwrap();
        assert_eq!(written, [dir.path().join("e2e-scaling-load-hot.svg")]);
        let svg = std::fs::read_to_string(&written[0]).unwrap();
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.contains("sqlite p50") && svg.contains("postgres p99"));

        report.results.truncate(1);
        assert!(
            write_plots(&report, dir.path()).unwrap().is_empty(),
            "one point is no curve"
        );
    }
}
