use super::*;
use http::HeaderMap;

fn outlets(log: bool, spans: bool, ratio: f64) -> (Telemetry, Vec<mpsc::Receiver<Arc<Entry>>>) {
    let mut rxs = Vec::new();
    let mut queue = |on: bool| {
        on.then(|| {
            let (tx, rx) = mpsc::channel(1);
            rxs.push(rx);
            Queue { tx, dropped: Counter::default() }
        })
    };
    let o = Outlets { log: queue(log), spans: queue(spans), sample_ratio: ratio, capture: false };
    let t = Telemetry::default();
    assert!(t.outlets.set(Arc::new(o)).is_ok());
    (t, rxs)
}

fn headers(traceparent: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("traceparent", traceparent.parse().unwrap());
    h.insert("tracestate", "vendor=1".parse().unwrap());
    h
}

#[tokio::test]
async fn a_full_queue_drops_and_counts_instead_of_waiting() {
    let (t, _rxs) = outlets(true, false, 1.0);
    for _ in 0..3 {
        drop(t.begin("req", "/v1/chat/completions", &HeaderMap::new()).unwrap());
    }
    let o = t.outlets.get().unwrap();
    assert_eq!(o.log.as_ref().unwrap().dropped.get(), 2, "one queued, two dropped");
}

#[tokio::test]
async fn sampling_follows_the_client_then_the_ratio() {
    let off = HeaderMap::new();
    // Traces only, ratio 0: no journal without a client trace.
    let (t, _rxs) = outlets(false, true, 0.0);
    assert!(t.begin("r", "/", &off).is_none());
    // The client's sampled flag wins over the ratio.
    let sampled = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let j = t.begin("r", "/", &headers(sampled)).unwrap();
    let trace = j.trace().unwrap();
    assert!(trace.sampled);
    assert_eq!(crate::journal::trace::hex(&trace.trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(trace.parent_span_id, Some([0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7]));
    assert_eq!(trace.tracestate.as_deref(), Some("vendor=1"));
    // Unsampled by the client: a journal that only passes the trace on.
    let unsampled = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
    assert!(!t.begin("r", "/", &headers(unsampled)).unwrap().trace().unwrap().sampled);
    // Ratio 1: every request without a client trace is a new root.
    let (t, _rxs) = outlets(false, true, 1.0);
    let root = t.begin("r", "/", &off).unwrap().trace().unwrap();
    assert!(root.sampled && root.parent_span_id.is_none());
}

#[tokio::test]
async fn unsampled_requests_reach_the_log_but_not_the_exporter() {
    let (t, mut rxs) = outlets(true, true, 0.0);
    drop(t.begin("r", "/", &HeaderMap::new()).unwrap());
    assert!(rxs[0].try_recv().is_ok(), "the log has it");
    assert!(rxs[1].try_recv().is_err(), "the exporter does not");
}

#[test]
fn nothing_on_means_no_journal() {
    let t = Telemetry::default();
    assert!(t.begin("r", "/", &HeaderMap::new()).is_none());
}
