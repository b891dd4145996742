//! Remote media URL policy (rules U1–U8). Being written.
