//! ebm-samplers (under construction).
