//! The code of the book's "Using the crates" pages (quick start, reproducibility, model files,
//! datasets), compiled and run by CI so that the book cannot drift from the library.
//!
//! Run with `cargo run --release --example using` (a second).

// ANCHOR: imports
use ebm::nalgebra::DMatrix;
use ebm::prelude::*;
// ANCHOR_END: imports
use std::path::Path;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // ANCHOR: model
    let rbm = Rbm::new(
        Bernoulli::new(vec![0.0; 4]),     // visible fields
        Bernoulli::new(vec![0.0; 2]),     // hidden fields
        DMatrix::from_element(4, 2, 0.5), // weights, visible x hidden
    )?;
    // ANCHOR_END: model

    // ANCHOR: sample
    let mut state = ChainState::new(rbm.new_state(256), 42); // 256 chains, seed 42
    run(&rbm, &Gibbs::new(1), 1.0, &mut state, 100, Par::Rayon, ())?;
    // ANCHOR_END: sample
    assert_eq!(state.steps, 100);

    // ANCHOR: observe
    let log = FnObserver(|step, info: &StepInfo<'_, GibbsInfo, RbmChains<f64>>| {
        println!("step {step}: {} sweeps", info.kernel.sweeps);
        Ok(())
    });
    run(
        &rbm,
        &Gibbs::new(1),
        1.0,
        &mut state,
        1000,
        Par::Rayon,
        Every(100, log),
    )?;
    // ANCHOR_END: observe

    // ANCHOR: checkpoint
    let saved = serde_json::to_string(&state)?;
    let mut resumed: ChainState<RbmChains<f64>> = serde_json::from_str(&saved)?;
    run(&rbm, &Gibbs::new(1), 1.0, &mut resumed, 50, Par::Rayon, ())?;
    run(&rbm, &Gibbs::new(1), 1.0, &mut state, 50, Par::Seq, ())?;
    assert_eq!(resumed, state); // bit for bit, whatever the thread count
    // ANCHOR_END: checkpoint

    let dir = tempfile::tempdir()?;
    let file = dir.path().join("model.safetensors");
    let rbm = Rbm::new(
        Bernoulli::<f32>::new(vec![0.1; 4]),
        Spin::<f32>::new(vec![-0.2; 2]),
        DMatrix::from_element(4, 2, 0.5),
    )?;
    // ANCHOR: files
    save_rbm(&rbm, &file)?;
    let back: Rbm<Bernoulli<f32>, Spin<f32>> = load_rbm(&file)?;
    let info = read_rbm_info(&file)?; // unit types, sizes, dtype
    // ANCHOR_END: files
    assert_eq!(back, rbm);
    println!("{}: {info:?}", Path::new("model.safetensors").display());

    // ANCHOR: data
    use ebm::data::generators::clusters::ClusterPreset;
    use ebm::data::{Centering, Domain, GeneratorSpec, generate, pca, split};

    let ds =
        generate(&GeneratorSpec::Preset(ClusterPreset::Mickey), 1)?.to_domain(Domain::Binary01)?;
    let (train, test) = split(&ds, 0.6, 7)?;
    let p = pca(&train, 2, Centering::Centered)?;
    let m = p.project_normalized(test.data())?; // 2 x n_test, m_a = u_a·(x - μ)/√N
    // ANCHOR_END: data
    println!("{} test samples projected on 2 directions", m.ncols());
    Ok(())
}
