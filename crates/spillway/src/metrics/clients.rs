//! The client side of the connection: connections the server closed
//! because their client stopped reading (`server::client_io`).

use super::names;
use crate::client_link::Cut;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

/// `reason` of `spillway_slow_client_cuts_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CutLabels {
    /// `total` or `client_write_timeout` ([`Cut::label`]).
    pub reason: &'static str,
}

/// The families of this file.
#[derive(Debug, Clone)]
pub struct ClientMetrics {
    /// `spillway_slow_client_cuts_total`
    pub cuts: Family<CutLabels, Counter>,
}

impl ClientMetrics {
    /// Registers the families into `registry`.
    pub fn register(registry: &mut Registry) -> Self {
        let cuts = Family::default();
        registry.register(
            names::SLOW_CLIENT_CUTS,
            "Connections closed because the client stopped reading: a stream past timeouts.total (total) \
             or no byte accepted for server.client_write_timeout (client_write_timeout)",
            cuts.clone(),
        );
        Self { cuts }
    }

    /// Counts one connection closed for `why`.
    pub fn cut(&self, why: Cut) {
        self.cuts.get_or_create(&CutLabels { reason: why.label() }).inc();
    }
}
