//! Every layer's mean, variance and parameter statistics are derivatives of its cumulant
//! generating function: checked by finite differences, for every unit type.
//!
//! \\(\partial_I \Gamma^\beta = \beta E[x]\\), \\(\partial_I^2 \Gamma^\beta = \beta^2 \mathrm{Var}[x]\\),
//! \\(\partial_\phi \Gamma^\beta = -\beta E[\partial_\phi U]\\), and `energy_gradient` is
//! \\(\partial_\phi U\\).

use ebm_models::{Bernoulli, DReLU, Gaussian, Layer, Potts, ReLU, Spin};

/// Rebuilds `layer` with parameter `k` (flattened in `tensors()` order) shifted by `eps`.
fn perturbed<L: Layer<Scalar = f64>>(layer: &L, k: usize, eps: f64) -> L {
    let mut tensors = layer.tensors();
    let mut offset = 0;
    for t in tensors.iter_mut() {
        if k < offset + t.2.len() {
            t.2[k - offset] += eps;
            break;
        }
        offset += t.2.len();
    }
    let get = |name: &str| {
        tensors
            .iter()
            .find(|t| t.0 == name)
            .map(|t| (t.1.clone(), t.2.clone()))
    };
    L::from_tensors(layer.n_units(), &get).expect("perturbed parameters stay valid")
}

fn check<L: Layer<Scalar = f64>>(layer: &L, inputs: &[f64], sample: &[f64]) {
    let w = layer.width();
    let n_par = layer.n_parameters();
    for &beta in &[0.5, 1.3] {
        let g = |x: &[f64]| layer.cgf(x, beta);
        let mut mean = inputs.to_vec();
        layer.mean_in_place(&mut mean, beta);
        let mut var = inputs.to_vec();
        layer.variance_in_place(&mut var, beta);
        for j in 0..w {
            let (e1, e2) = (1e-5, 1e-3);
            let at = |d: f64| {
                let mut x = inputs.to_vec();
                x[j] += d;
                g(&x)
            };
            let d1 = (at(e1) - at(-e1)) / (2.0 * e1);
            assert!(
                (d1 - beta * mean[j]).abs() < 1e-7 * (1.0 + d1.abs()),
                "{}: dGamma/dI {d1} vs beta*mean {}",
                L::KIND,
                beta * mean[j]
            );
            let d2 = (at(e2) - 2.0 * at(0.0) + at(-e2)) / (e2 * e2);
            assert!(
                (d2 - beta * beta * var[j]).abs() < 1e-4 * (1.0 + d2.abs()),
                "{}: d2Gamma/dI2 {d2} vs {}",
                L::KIND,
                beta * beta * var[j]
            );
        }
        let mut expected = vec![0.0; n_par];
        layer.expected_energy_gradient(inputs, beta, &mut expected);
        let mut grad = vec![0.0; n_par];
        layer.energy_gradient(sample, &mut grad);
        for (k, (&ex, &gr)) in expected.iter().zip(&grad).enumerate() {
            let eps = 1e-6;
            let (up, down) = (perturbed(layer, k, eps), perturbed(layer, k, -eps));
            let dg = (up.cgf(inputs, beta) - down.cgf(inputs, beta)) / (2.0 * eps);
            assert!(
                (dg + beta * ex).abs() < 1e-6 * (1.0 + dg.abs()),
                "{} param {k}: dGamma {dg} vs -beta E {}",
                L::KIND,
                -beta * ex
            );
            let du = (up.energy(sample) - down.energy(sample)) / (2.0 * eps);
            assert!(
                (du - gr).abs() < 1e-6 * (1.0 + du.abs()),
                "{} param {k}: dU {du} vs {gr}",
                L::KIND
            );
        }
    }
}

#[test]
fn statistics_are_derivatives_of_the_cgf_for_every_unit_type() {
    let inputs = [-2.5, 0.4, 1.7];
    check(
        &Bernoulli::new(vec![0.3, -0.7, 0.1]),
        &inputs,
        &[1.0, 0.0, 1.0],
    );
    check(
        &Spin::new(vec![0.3, -0.7, 0.1]),
        &inputs,
        &[1.0, -1.0, -1.0],
    );
    check(
        &Gaussian::new(vec![0.8, 1.5, 0.4], vec![0.1, -0.3, 0.6]).unwrap(),
        &inputs,
        &[0.4, -1.2, 2.0],
    );
    check(
        &ReLU::new(vec![0.8, 1.5, 0.4], vec![0.1, -0.3, 0.6]).unwrap(),
        &inputs,
        &[0.4, 0.0, 2.0],
    );
    check(
        &DReLU::new(
            vec![1.2, 0.7, 2.0],
            vec![0.5, 2.0, 0.9],
            vec![0.4, 0.0, -0.2],
            vec![-0.6, 0.3, 0.1],
        )
        .unwrap(),
        &inputs,
        &[0.4, -1.1, 0.7],
    );
    let potts = Potts::new(3, vec![0.2, -0.1, 0.5, 0.0, 0.3, -0.4]).unwrap();
    check(
        &potts,
        &[0.3, -1.0, 0.8, 2.0, -0.5, 0.1],
        &[0.0, 1.0, 0.0, 1.0, 0.0, 0.0],
    );
}
