//! The client routes without `/v1` (`/chat/completions`, `/completions`,
//! `/embeddings`, `/models`, `/responses`, `/messages` and what is below
//! them): LiteLLM serves both, and clients configured with a base URL
//! that lacks `/v1` call these. The front door rewrites such a path to its
//! `/v1` route before anything else reads it, so both are one route.

/// The routes served without `/v1` as well.
const UNVERSIONED: [&str; 6] =
    ["/chat/completions", "/completions", "/embeddings", "/models", "/responses", "/messages"];

/// Rewrites an unversioned client route to its `/v1` path (the query kept).
pub(super) fn add_v1<B>(req: &mut http::Request<B>) {
    let path = req.uri().path();
    // The common case costs one comparison.
    if path.starts_with("/v1/") {
        return;
    }
    let aliased =
        UNVERSIONED.iter().any(|p| path.strip_prefix(p).is_some_and(|rest| rest.is_empty() || rest.starts_with('/')));
    if !aliased {
        return;
    }
    let with_query = req.uri().path_and_query().map_or(path, http::uri::PathAndQuery::as_str);
    if let Ok(pq) = http::uri::PathAndQuery::try_from(format!("/v1{with_query}")) {
        let mut parts = req.uri().clone().into_parts();
        parts.path_and_query = Some(pq);
        if let Ok(uri) = http::Uri::from_parts(parts) {
            *req.uri_mut() = uri;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path_of(p: &str) -> String {
        let mut req = http::Request::builder().uri(p).body(()).unwrap();
        add_v1(&mut req);
        req.uri().to_string()
    }

    #[test]
    fn client_routes_get_their_v1_and_nothing_else_does() {
        assert_eq!(path_of("/chat/completions"), "/v1/chat/completions");
        assert_eq!(path_of("/models/p/m"), "/v1/models/p/m");
        assert_eq!(path_of("/responses/resp_1/input_items?limit=2"), "/v1/responses/resp_1/input_items?limit=2");
        assert_eq!(path_of("/v1/embeddings"), "/v1/embeddings");
        assert_eq!(path_of("/modelsx"), "/modelsx");
        assert_eq!(path_of("/metrics"), "/metrics");
        assert_eq!(path_of("/admin/state"), "/admin/state");
    }
}
