//! ebm-io (under construction).
