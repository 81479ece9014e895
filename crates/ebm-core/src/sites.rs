//! Listing the states of a model whose chains are columns of site values, each site taking
//! values in a finite alphabet: [`SiteProduct`] numbers the configurations of the product of
//! the sites' alphabets, which is what [`crate::Enumerable`] asks for; and
//! [`exact_by_enumeration!`](crate::exact_by_enumeration) gives such a small model its exact
//! \\(\log Z_\beta\\) and exact draws by listing.
//!
//! # Example
//! ```
//! use ebm_core::sites::SiteProduct;
//! // Three spin-1 sites: 27 configurations.
//! let states = SiteProduct::uniform(&[-1.0, 0.0, 1.0], 3);
//! assert_eq!(states.n_states(), 27);
//! let mut x = [0.0; 3];
//! states.write(5, &mut x); // 5 = 2 + 1 * 3: site 0 takes value 2, site 1 value 1
//! assert_eq!(x, [1.0, 0.0, -1.0]);
//! assert_eq!(states.index(&x), 5);
//! ```

use crate::Scalar;

/// The configurations of `n` sites, site `i` taking a value of its alphabet `alphabets[i]`,
/// numbered in mixed radix with site 0 the fastest digit: configuration
/// \\(k = \sum_i d_i \prod_{j < i} |A_j|\\) gives site \\(i\\) the value number \\(d_i\\) of its alphabet \\(A_i\\).
#[derive(Clone, Debug, PartialEq)]
pub struct SiteProduct<F> {
    alphabets: Vec<Vec<F>>,
}

impl<F: Scalar> SiteProduct<F> {
    /// The product of one alphabet per site.
    ///
    /// # Panics
    /// If an alphabet is empty or repeats a value.
    pub fn new(alphabets: Vec<Vec<F>>) -> Self {
        for (i, a) in alphabets.iter().enumerate() {
            assert!(!a.is_empty(), "SiteProduct: site {i} has an empty alphabet");
            for (k, v) in a.iter().enumerate() {
                assert!(
                    !a[..k].contains(v),
                    "SiteProduct: site {i} lists the value {v:?} twice"
                );
            }
        }
        Self { alphabets }
    }

    /// `n` sites with the same alphabet.
    ///
    /// # Panics
    /// As [`SiteProduct::new`].
    pub fn uniform(alphabet: &[F], n: usize) -> Self {
        Self::new(vec![alphabet.to_vec(); n])
    }

    /// The number of sites.
    pub fn n_sites(&self) -> usize {
        self.alphabets.len()
    }

    /// The alphabet of `site`.
    ///
    /// # Panics
    /// If `site` is out of range.
    pub fn alphabet(&self, site: usize) -> &[F] {
        &self.alphabets[site]
    }

    /// The number of configurations, \\(\prod_i |A_i|\\) (saturating at `usize::MAX`: only
    /// small products can be listed).
    pub fn n_states(&self) -> usize {
        self.alphabets
            .iter()
            .try_fold(1usize, |n, a| n.checked_mul(a.len()))
            .unwrap_or(usize::MAX)
    }

    /// Writes configuration `k` into the first `n_sites` values of `x`.
    ///
    /// # Panics
    /// If `k >= n_states()` or `x` is shorter than `n_sites`.
    pub fn write(&self, k: usize, x: &mut [F]) {
        assert!(
            k < self.n_states(),
            "SiteProduct: state {k} of {}",
            self.n_states()
        );
        let mut rest = k;
        for (v, a) in x[..self.alphabets.len()].iter_mut().zip(&self.alphabets) {
            *v = a[rest % a.len()];
            rest /= a.len();
        }
    }

    /// The number of the configuration held by the first `n_sites` values of `x` (the inverse
    /// of [`SiteProduct::write`]).
    ///
    /// # Panics
    /// If a value is not in its site's alphabet, or `x` is shorter than `n_sites`.
    pub fn index(&self, x: &[F]) -> usize {
        let mut k = 0;
        let mut radix = 1;
        for (i, (v, a)) in x[..self.alphabets.len()]
            .iter()
            .zip(&self.alphabets)
            .enumerate()
        {
            let d = a
                .iter()
                .position(|u| u == v)
                .unwrap_or_else(|| panic!("SiteProduct: site {i} holds {v:?}, not in {a:?}"));
            k += d * radix;
            radix *= a.len();
        }
        k
    }
}

/// Implements [`ExactLogPartition`](crate::ExactLogPartition) and
/// [`ExactSampling`](crate::ExactSampling) for an [`Enumerable`](crate::Enumerable) model by
/// listing its states ([`Enumerable::enumerated_log_partition`](crate::Enumerable::enumerated_log_partition)
/// and [`Enumerable::sample_enumerated`](crate::Enumerable::sample_enumerated)): a small model
/// then serves as rung 0 of annealing and trajectory tempering, and as the exact reference of
/// tests, with no code of its own. Write `exact_by_enumeration!(Type)` for a type without
/// parameters, or `exact_by_enumeration!(impl<F: Bound> Type<F>)` for a generic one.
///
/// # Example
/// ```
/// use ebm_core::{EnergyModel, Enumerable, ExactLogPartition, Par, exact_by_enumeration};
/// use nalgebra::DMatrix;
/// /// One spin in a field h: E(s) = -h s.
/// struct Spin1(f64);
/// impl EnergyModel for Spin1 {
///     type Scalar = f64;
///     type State = DMatrix<f64>;
///     fn energies(&self, x: &DMatrix<f64>, beta: f64, out: &mut [f64], _: Par) {
///         for (o, c) in out.iter_mut().zip(x.column_iter()) {
///             *o = -beta * self.0 * c[0];
///         }
///     }
///     fn new_state(&self, n: usize) -> DMatrix<f64> {
///         DMatrix::from_element(1, n, 1.0)
///     }
/// }
/// impl Enumerable for Spin1 {
///     fn n_states(&self) -> usize { 2 }
///     fn write_state(&self, k: usize, x: &mut DMatrix<f64>, c: usize) {
///         x[(0, c)] = if k == 1 { 1.0 } else { -1.0 };
///     }
///     fn state_index(&self, x: &DMatrix<f64>, c: usize) -> usize {
///         usize::from(x[(0, c)] > 0.0)
///     }
/// }
/// exact_by_enumeration!(Spin1);
/// let log_z = Spin1(0.5).log_partition(2.0);
/// assert!((log_z - (2.0f64 * 1.0f64.cosh()).ln()).abs() < 1e-12);
/// ```
#[macro_export]
macro_rules! exact_by_enumeration {
    (impl<$($p:ident $(: $b:path)?),+> $t:ty) => {
        $crate::exact_by_enumeration!(@impl [$($p $(: $b)?),+] $t);
    };
    (@impl [$($g:tt)*] $t:ty) => {
        impl<$($g)*> $crate::ExactLogPartition for $t {
            fn log_partition(&self, beta: f64) -> f64 {
                $crate::Enumerable::enumerated_log_partition(self, beta, $crate::Par::Rayon)
            }
        }
        impl<$($g)*> $crate::ExactSampling for $t {
            fn sample_exact<R: $crate::rand::Rng + Send>(
                &self,
                x: &mut <Self as $crate::EnergyModel>::State,
                beta: f64,
                rngs: &mut [R],
                par: $crate::Par,
            ) {
                $crate::Enumerable::sample_enumerated(self, x, beta, rngs, par);
            }
        }
    };
    ($t:ty) => {
        $crate::exact_by_enumeration!(@impl [] $t);
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_configuration_is_listed_once_and_read_back() {
        let s = SiteProduct::new(vec![vec![-1.0, 1.0], vec![0.0, 1.0, 2.0], vec![5.0]]);
        assert_eq!(s.n_states(), 6);
        let mut seen = Vec::new();
        let mut x = [0.0; 4];
        for k in 0..s.n_states() {
            s.write(k, &mut x);
            assert_eq!(s.index(&x), k);
            assert!(!seen.contains(&x[..3].to_vec()));
            seen.push(x[..3].to_vec());
        }
        assert_eq!(seen[1], vec![1.0, 0.0, 5.0]);
        assert_eq!(seen[2], vec![-1.0, 1.0, 5.0]);
    }

    #[test]
    #[should_panic(expected = "not in")]
    fn a_value_outside_the_alphabet_is_refused() {
        SiteProduct::uniform(&[-1.0, 1.0], 2).index(&[1.0, 0.0]);
    }

    #[test]
    #[should_panic(expected = "twice")]
    fn a_repeated_value_is_refused() {
        SiteProduct::uniform(&[1.0, 1.0], 2);
    }

    /// One site of three values with energy `-h x`, generic over the scalar: the generic
    /// form of `exact_by_enumeration!`.
    struct Three<F>(F);

    impl<F: Scalar> crate::EnergyModel for Three<F> {
        type Scalar = F;
        type State = nalgebra::DMatrix<F>;
        fn energies(&self, x: &nalgebra::DMatrix<F>, beta: f64, out: &mut [f64], _: crate::Par) {
            for (o, c) in out.iter_mut().zip(x.column_iter()) {
                *o = -beta * num_traits::ToPrimitive::to_f64(&(self.0 * c[0])).unwrap();
            }
        }
        fn new_state(&self, n: usize) -> nalgebra::DMatrix<F> {
            nalgebra::DMatrix::zeros(1, n)
        }
    }

    impl<F: Scalar> crate::Enumerable for Three<F> {
        fn n_states(&self) -> usize {
            3
        }
        fn write_state(&self, k: usize, x: &mut nalgebra::DMatrix<F>, c: usize) {
            x[(0, c)] = <F as num_traits::NumCast>::from(k).unwrap();
        }
        fn state_index(&self, x: &nalgebra::DMatrix<F>, c: usize) -> usize {
            num_traits::ToPrimitive::to_usize(&x[(0, c)]).unwrap()
        }
    }

    crate::exact_by_enumeration!(impl<F: Scalar> Three<F>);

    #[test]
    fn the_generic_form_lists_the_states() {
        use crate::{EnergyModel, ExactLogPartition, ExactSampling};
        let m = Three(0.5f32);
        let exact = (1.0f64 + 0.5f64.exp() + 1.0f64.exp()).ln();
        assert!((m.log_partition(1.0) - exact).abs() < 1e-6);
        let mut x = m.new_state(3000);
        let mut rngs = crate::RngStreams::new(1, 3000);
        m.sample_exact(&mut x, 1.0, rngs.as_mut_slice(), crate::Par::Seq);
        let twos = x.iter().filter(|&&v| v == 2.0).count() as f64 / 3000.0;
        assert!((twos - 1.0f64.exp() / exact.exp()).abs() < 0.03, "{twos}");
    }

    #[test]
    fn a_large_product_saturates() {
        assert_eq!(
            SiteProduct::uniform(&[0.0, 1.0, 2.0], 64).n_states(),
            usize::MAX
        );
    }
}
