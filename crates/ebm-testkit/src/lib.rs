//! ebm-testkit (under construction).
