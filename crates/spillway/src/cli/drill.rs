//! `spillway drill SCENARIO.yaml`: run a fault scenario on the real engine
//! with mock providers; print the report, write the SVG chart, and exit 1
//! when the scenario is invalid or one of its pass marks (`expect`) fails.

use crate::drill;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Runs the command.
pub fn run(scenario_path: &Path, svg: Option<PathBuf>, json: bool) -> ExitCode {
    let scenario = match drill::load_file(scenario_path) {
        Ok(s) => s,
        Err(errors) => {
            print!("{}", super::errors_text(scenario_path, &errors));
            return ExitCode::from(1);
        }
    };
    let run = match drill::run(&scenario) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(1);
        }
    };
    let report = drill::report::build(&scenario, &run);
    let title = scenario_path.file_name().map_or_else(|| "scenario".into(), |n| n.to_string_lossy().into_owned());
    let svg_path = svg.unwrap_or_else(|| default_svg_path(scenario_path));
    if let Err(e) = std::fs::write(&svg_path, drill::svg::render(&report, &title)) {
        eprintln!("cannot write the chart to {}: {e}", svg_path.display());
        return ExitCode::from(1);
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&report).unwrap_or_default());
    } else {
        print!("{}", report.text(&title));
        println!("\nChart: {}", svg_path.display());
    }
    if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// `drills/outage.yaml` → `outage.svg` in the current directory.
fn default_svg_path(scenario: &Path) -> PathBuf {
    let stem = scenario.file_stem().map_or_else(|| "drill".into(), |s| s.to_string_lossy().into_owned());
    PathBuf::from(format!("{stem}.svg"))
}
