//! Background work: discovery refresh, load monitors, alert sending.
//!
//! Each job is a value with `async fn run(self, shutdown)`; the
//! [`Supervisor`] starts it on a tracked task and stops every job by
//! cancelling one token, then waits for them. Jobs log and retry their own
//! failures; a job never panics and never blocks a request.

use std::future::Future;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// A long-running background job.
pub trait BackgroundJob: Send + 'static {
    /// Its name, for logs.
    fn name(&self) -> &'static str;
    /// Runs until `shutdown` is cancelled.
    fn run(self, shutdown: CancellationToken) -> impl Future<Output = ()> + Send;
}

/// Starts and stops background jobs.
#[derive(Debug, Clone)]
pub struct Supervisor {
    tracker: TaskTracker,
    shutdown: CancellationToken,
}

impl Supervisor {
    /// A supervisor whose jobs stop when `shutdown` is cancelled.
    pub fn new(shutdown: CancellationToken) -> Self {
        Self { tracker: TaskTracker::new(), shutdown }
    }

    /// A supervisor for jobs of a narrower life (one config generation):
    /// stopped by its own token or by the parent's.
    pub fn child(&self) -> Self {
        Self { tracker: self.tracker.clone(), shutdown: self.shutdown.child_token() }
    }

    /// Starts a job.
    pub fn spawn<J: BackgroundJob>(&self, job: J) {
        let name = job.name();
        let token = self.shutdown.clone();
        self.tracker.spawn(async move {
            tracing::debug!(job = name, "Background job started.");
            job.run(token).await;
            tracing::debug!(job = name, "Background job stopped.");
        });
    }

    /// The token that stops this supervisor's jobs.
    pub fn token(&self) -> &CancellationToken {
        &self.shutdown
    }

    /// Stops every job and waits up to `grace` for them.
    pub async fn stop(&self, grace: Duration) {
        self.shutdown.cancel();
        self.tracker.close();
        if tokio::time::timeout(grace, self.tracker.wait()).await.is_err() {
            tracing::warn!("Some background jobs did not stop in time.");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    struct Job(Arc<AtomicBool>);

    impl BackgroundJob for Job {
        fn name(&self) -> &'static str {
            "test"
        }
        async fn run(self, shutdown: CancellationToken) {
            shutdown.cancelled().await;
            self.0.store(true, Ordering::SeqCst);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn stop_cancels_and_waits() {
        let sup = Supervisor::new(CancellationToken::new());
        let flag = Arc::new(AtomicBool::new(false));
        sup.child().spawn(Job(flag.clone()));
        sup.stop(Duration::from_secs(1)).await;
        assert!(flag.load(Ordering::SeqCst));
    }
}
