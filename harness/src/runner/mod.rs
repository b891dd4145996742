//! Everything that runs something: the SUT driver, the differential campaign with its
//! shrinking, end-to-end turns against real runtimes, and the reports they write. Built only
//! with the `runner` feature.

pub mod baseline;
pub mod campaign;
pub mod cpu;
pub mod e2e;
pub mod impact;
pub mod report;
pub mod shrink;
pub mod steer;
pub mod sut;
pub mod upstream;
