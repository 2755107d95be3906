//! The process's own metrics, as Prometheus client libraries name them:
//! `process_resident_memory_bytes`, `process_virtual_memory_bytes`,
//! `process_cpu_seconds_total`, `process_open_fds`, `process_max_fds`,
//! `process_start_time_seconds`. Read from `/proc/self` when `/metrics` is
//! scraped (Linux only; elsewhere nothing is written). Written by hand:
//! the crates that do this pull in a libc binding for two numbers.

use std::fmt::Write;

/// Linux's `USER_HZ`: the unit of CPU times in `/proc/self/stat`. Fixed
/// at 100 by the kernel's ABI on every architecture it exports it for.
const TICKS_PER_SECOND: f64 = 100.0;

/// What `/proc/self` says, as OpenMetrics text (empty when unreadable).
pub(super) fn render() -> String {
    let mut out = String::new();
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = |field: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|k| k * 1024)
    };
    let mut gauge = |name: &str, help: &str, value: Option<f64>| {
        if let Some(v) = value {
            let _ = write!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}\n");
        }
    };
    gauge("process_resident_memory_bytes", "Resident memory size in bytes.", kb("VmRSS:").map(|b| b as f64));
    gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", kb("VmSize:").map(|b| b as f64));
    let fds = std::fs::read_dir("/proc/self/fd").ok().map(|d| d.count() as f64);
    gauge("process_open_fds", "Number of open file descriptors.", fds);
    gauge("process_max_fds", "Maximum number of open file descriptors.", max_fds());
    let stat = std::fs::read_to_string("/proc/self/stat").ok();
    let fields = stat.as_deref().and_then(stat_fields);
    let start = fields.as_ref().and_then(|f| f.start_ticks).and_then(|t| boot_time().map(|b| b + t / TICKS_PER_SECOND));
    gauge("process_start_time_seconds", "Start time of the process since the Unix epoch in seconds.", start);
    if let Some(cpu) = fields.and_then(|f| f.cpu_ticks) {
        let name = "process_cpu_seconds";
        let v = cpu / TICKS_PER_SECOND;
        let _ = write!(
            out,
            "# HELP {name} Total user and system CPU time spent in seconds.\n# TYPE {name} counter\n# UNIT {name} seconds\n{name}_total {v}\n"
        );
    }
    out
}

struct Stat {
    /// utime + stime.
    cpu_ticks: Option<f64>,
    /// Start time after boot.
    start_ticks: Option<f64>,
}

/// The fields of `/proc/self/stat` after the command name (which may hold
/// spaces and parentheses: the last `)` ends it).
fn stat_fields(text: &str) -> Option<Stat> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state): utime is field 14, stime 15, starttime 22.
    let num = |i: usize| f.get(i - 3).and_then(|v| v.parse::<f64>().ok());
    let cpu_ticks = num(14).zip(num(15)).map(|(u, s)| u + s);
    Some(Stat { cpu_ticks, start_ticks: num(22) })
}

fn boot_time() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    text.lines().find_map(|l| l.strip_prefix("btime ")).and_then(|v| v.trim().parse().ok())
}

fn max_fds() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3).and_then(|v| v.parse().ok())
}

#[cfg(test)]
mod tests {
    #[test]
    fn stat_fields_survive_a_command_name_with_spaces_and_parentheses() {
        let line = "42 (a b) c)) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 1 0 1234 0 0";
        let s = super::stat_fields(line).unwrap();
        assert_eq!(s.cpu_ticks, Some(300.0));
        assert_eq!(s.start_ticks, Some(1234.0));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_process_metrics_are_read_on_linux() {
        let text = super::render();
        for name in
            ["process_resident_memory_bytes ", "process_cpu_seconds_total ", "process_open_fds ", "process_max_fds "]
        {
            let v: f64 = text.lines().find_map(|l| l.strip_prefix(name)).unwrap().parse().unwrap();
            assert!(v >= 0.0, "{name}{v}");
        }
        let rss: f64 =
            text.lines().find_map(|l| l.strip_prefix("process_resident_memory_bytes ")).unwrap().parse().unwrap();
        assert!(rss > 1_000_000.0, "a test process uses more than 1 MB: {rss}");
    }
}
