//! The compiled configuration's types, one file per section of the file.

mod canary;
mod cascades;
mod health;
mod keys;
mod load;
mod providers;
mod redis_url;
mod responses;
mod rules;
mod server;
mod telemetry;

pub use canary::*;
pub use cascades::*;
pub use health::*;
pub use keys::*;
pub use load::*;
pub use providers::*;
pub use redis_url::*;
pub use responses::*;
pub use rules::*;
pub use server::*;
pub use telemetry::*;
