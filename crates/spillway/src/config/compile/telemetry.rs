//! `telemetry:`.

use super::*;
use std::path::Path;

pub(super) fn compile_telemetry(cx: &mut Ctx, t: RawTelemetry, base_dir: &Path) -> TelemetryConfig {
    let request_log = t.request_log.map(|r| compile_request_log(cx, r, base_dir));
    let otlp = t.otlp.map(|o| compile_otlp(cx, o));
    TelemetryConfig { capture_content: t.capture_content.unwrap_or(false), request_log, otlp }
}

fn compile_request_log(cx: &mut Ctx, r: RawRequestLog, base_dir: &Path) -> RequestLogConfig {
    const PATH: &str = "telemetry.request_log";
    let target = match r.path.as_deref() {
        None | Some("stdout" | "-") => LogTarget::Stdout,
        Some("") => {
            cx.err(format!("{PATH}.path"), "must be `stdout` or a file path");
            LogTarget::Stdout
        }
        Some(p) => LogTarget::File(base_dir.join(p)),
    };
    let default_size = 100 * 1024 * 1024;
    let max_size = match r.max_size {
        None => default_size,
        Some(RawSize::Bytes(b)) => b,
        Some(RawSize::Text(t)) => parse_size(&t).unwrap_or_else(|e| {
            cx.err(format!("{PATH}.max_size"), e);
            default_size
        }),
    };
    if max_size < 4096 {
        cx.err(format!("{PATH}.max_size"), "must be at least 4KiB");
    }
    let keep = r.keep.unwrap_or(5);
    if keep > 1000 {
        cx.err(format!("{PATH}.keep"), "at most 1000 rotated files");
    }
    let queue = r.queue.unwrap_or(10_000);
    if queue == 0 {
        cx.err(format!("{PATH}.queue"), "must be greater than 0");
    }
    RequestLogConfig {
        target,
        max_size,
        keep: u32::try_from(keep).unwrap_or(1000),
        queue: usize::try_from(queue).unwrap_or(usize::MAX).max(1),
    }
}

fn compile_otlp(cx: &mut Ctx, o: RawOtlp) -> OtlpConfig {
    const PATH: &str = "telemetry.otlp";
    check_url(cx, &format!("{PATH}.endpoint"), &o.endpoint);
    let url = traces_url(&o.endpoint);
    let headers = compile_headers(cx, &format!("{PATH}.headers"), o.headers.unwrap_or_default());
    let sample_ratio = cx.share(&format!("{PATH}.sample_ratio"), o.sample_ratio, 1.0);
    let service_name = o.service_name.unwrap_or_else(|| "spillway".to_string());
    if service_name.is_empty() {
        cx.err(format!("{PATH}.service_name"), "must not be empty");
    }
    let mut count = |key: &str, value: Option<u64>, default: usize| match value {
        Some(0) => {
            cx.err(format!("{PATH}.{key}"), "must be greater than 0");
            default
        }
        Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
        None => default,
    };
    let queue = count("queue", o.queue, 8192);
    let batch = count("batch", o.batch, 512);
    let interval = cx.duration(&format!("{PATH}.interval"), o.interval.as_ref(), Duration::from_secs(1));
    let timeout = cx.duration(&format!("{PATH}.timeout"), o.timeout.as_ref(), Duration::from_secs(10));
    if timeout.is_zero() {
        cx.err(format!("{PATH}.timeout"), "must be longer than 0");
    }
    OtlpConfig { url, headers, sample_ratio, service_name, queue, batch, interval, timeout }
}

/// `endpoint` + `/v1/traces`, unless it names a path of its own (as
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` would).
fn traces_url(endpoint: &str) -> String {
    let trimmed = endpoint.trim_end_matches('/');
    let after_scheme = trimmed.split_once("://").map_or(trimmed, |(_, rest)| rest);
    if after_scheme.contains('/') {
        trimmed.to_string()
    } else {
        format!("{trimmed}/v1/traces")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_traces_path_is_added_to_a_bare_endpoint() {
        assert_eq!(super::traces_url("http://c:4318"), "http://c:4318/v1/traces");
        assert_eq!(super::traces_url("http://c:4318/"), "http://c:4318/v1/traces");
        assert_eq!(super::traces_url("https://c/otlp/v1/traces"), "https://c/otlp/v1/traces");
    }
}
