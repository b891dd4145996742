//! Mock chat channels: what a runtime's user would receive, served by the same
//! [`MockProviders`](crate::server::MockProviders) server as the provider mocks.

pub mod telegram;
