//! proptest strategies for small random binary RBMs.

use ebm_models::{BinaryLayer, Rbm};
use nalgebra::DMatrix;
use proptest::prelude::*;

/// Random RBMs with binary layers `V` and `H` (f64), `nv` visible and `nh` hidden units drawn
/// from the given ranges, and weights and fields uniform in \\([-\text{scale}, \text{scale}]\\).
pub fn binary_rbm<V, H>(
    nv: std::ops::RangeInclusive<usize>,
    nh: std::ops::RangeInclusive<usize>,
    scale: f64,
) -> impl Strategy<Value = Rbm<V, H>>
where
    V: BinaryLayer<Scalar = f64>,
    H: BinaryLayer<Scalar = f64>,
{
    (nv, nh).prop_flat_map(move |(nv, nh)| {
        (
            prop::collection::vec(-scale..=scale, nv),
            prop::collection::vec(-scale..=scale, nh),
            prop::collection::vec(-scale..=scale, nv * nh),
        )
            .prop_map(move |(a, b, w)| {
                Rbm::new(
                    V::with_fields(a),
                    H::with_fields(b),
                    DMatrix::from_vec(nv, nh, w),
                )
                .expect("shapes agree by construction")
            })
    })
}
