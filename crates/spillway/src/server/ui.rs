//! `GET /ui`: the operator console (SPEC §5, §8) — one static page that
//! shows the cascades with their health, the load profiles and the handoff
//! queue, and lets a person revive a model or answer a queued request.
//!
//! The page holds no data: its script asks for the admin token and calls
//! the admin API with it, so the page itself needs no credentials (a
//! browser cannot send a bearer token when navigating). Like the admin
//! API, it is off when `server.admin_token` is not set: then `/ui` is a
//! 404 whose HTML page says how to turn it on.

use super::AppState;
use axum::extract::State;
use axum::http::{header, HeaderValue};
use axum::response::Response;
use std::sync::Arc;

/// The page, embedded in the binary.
const PAGE: &str = include_str!("ui.html");

/// Scripts and styles are inline, calls go to this origin only, and
/// nothing may frame the page.
const CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; \
                   img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// What `/ui` shows when the admin API is off.
const OFF_PAGE: &str = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>Spillway console: off</title>\
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:40em;margin:2em auto;padding:0 1em}\
pre{background:#f3f4f6;padding:8px;overflow-x:auto}</style></head><body>\
<h1>The operator console is off</h1>\
<p>This gateway has no admin token configured, so the console and the admin API are disabled.</p>\
<p>To turn them on, add a token (<code>server.admin_token</code>) to the config file the gateway runs on:</p>\
<pre>server:\n  admin_token: \"a-long-random-string\"</pre>\
<p>then reload the config (<code>kill -HUP &lt;pid&gt;</code> of <code>spillway serve</code>) or restart the gateway, \
open <code>/ui</code> again and enter that token.</p>\
<p>To keep the token out of the file, write <code>admin_token: ${SPILLWAY_ADMIN_TOKEN}</code> instead; a reload \
reads the variables the gateway was started with, so set the variable and <em>restart</em> it. For a gateway on a \
loopback address, <code>generate_admin_token: true</code> makes one at each start and prints it \
(<code>spillway status</code> finds it).</p></body></html>\n";

/// Serves the console, or the page that says it is off (404).
pub async fn page(State(state): State<Arc<AppState>>) -> Response {
    if state.gateway.load().config.server.admin_token.is_none() {
        let mut r = Response::new(axum::body::Body::from(OFF_PAGE));
        *r.status_mut() = axum::http::StatusCode::NOT_FOUND;
        let h = r.headers_mut();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
        h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        return r;
    }
    let mut r = Response::new(axum::body::Body::from(PAGE));
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    r
}
